package tracer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Available reports whether strace (and, for a root engine, setpriv) can
// trace runs here, and says how or why not.
func Available() (bool, string) {
	if runtime.GOOS != "linux" {
		return false, "outside tracing with strace needs Linux"
	}
	if _, err := exec.LookPath("strace"); err != nil {
		return false, "strace is not installed (apt-get install strace)"
	}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			return false, "setpriv is not installed (apt-get install util-linux)"
		}
	}
	return true, "strace follows every process of the run from outside the sandbox (ptrace)"
}

// Session is one run under strace. Its output comes through a pipe that
// only the engine and strace hold: strace opens it by the engine's
// /proc/<pid>/fd path, with close-on-exec, so no traced process inherits
// it, and nothing of it exists in the sandbox's view.
type Session struct {
	r, w    *os.File
	env     *os.File // the launcher's environment, until strace has it
	closeW  sync.Once
	started chan struct{} // closed when strace's first line arrives
	// launched is closed by Process, once the backend's start is over:
	// the early Release (firstRead) waits for it, so that it never closes
	// a file the start may still be handing on.
	launched     chan struct{}
	launchedOnce sync.Once
	earlyOnce    sync.Once
	root         int           // the pid of strace's child, once started
	done         chan struct{} // closed when strace's output is read to its end
	untraced     string        // why the run is not traced, when it is not
}

// WaitDrain bounds how long Wait waits for the last trace lines after
// the process is gone.
const WaitDrain = 10 * time.Second

// Wrap rewrites cmd (not yet started) to run under strace and report to
// emit. skipExecs counts the programs that exec between the launch and
// the traced command (1 for bwrap, 0 when cmd runs the command itself).
//
// strace runs on the host, outside the sandbox, so it starts with
// backends.HelperEnv, never the run's environment. cmd.Env is what the
// command gets: a command that sets the sandbox's environment itself
// (bwrap) has HelperEnv already; any other gets its own from launcher
// (the envexec launcher, the engine's executable), which reads it from a
// descriptor and drops to the user in setpriv's place. With no launcher
// such a command is not traced.
//
// When cmd has a Credential and the engine is root, strace stays root and
// setpriv (or the launcher) drops to the user, so the traced code cannot
// signal or ptrace its tracer. When strace cannot run here, the command
// is left as it is and the Session marks the run untraced
// (Enforcement.Missing gets NoOutsideTracer): tracing never decides
// whether a run happens.
func Wrap(cmd *exec.Cmd, emit func(backends.TraceEvent), skipExecs int, launcher string) (*Session, error) {
	if ok, why := Available(); !ok {
		return &Session{untraced: why}, nil
	}
	ownEnv := !slices.Equal(cmd.Env, backends.HelperEnv())
	if ownEnv && launcher == "" {
		return &Session{untraced: "no launcher is configured to give the traced command its environment while strace runs with a fixed one"}, nil
	}
	straceBin, _ := exec.LookPath("strace")
	c := Command{Strace: straceBin, Argv: append([]string{cmd.Path}, cmd.Args[1:]...)}
	if !filepath.IsAbs(cmd.Path) {
		c.Argv[0] = filepath.Join(cmd.Dir, cmd.Path)
	}
	var envFile *os.File
	if ownEnv {
		var err error
		if envFile, err = envMemfd(cmd.Env); err != nil {
			return nil, fmt.Errorf("passing the traced command its environment: %w", err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, envFile)
		c.Launcher, c.EnvFD = launcher, 2+len(cmd.ExtraFiles)
	}
	cmd.Env = backends.HelperEnv()
	c.Drop = takeCredential(cmd)
	if c.Drop != nil && c.Launcher == "" {
		c.Setpriv, _ = exec.LookPath("setpriv")
	}
	skipExecs += c.LauncherExecs()
	r, w, err := os.Pipe()
	if err != nil {
		if envFile != nil {
			envFile.Close()
		}
		return nil, fmt.Errorf("creating the trace pipe: %w", err)
	}
	c.Output = fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), w.Fd())
	cmd.Path = straceBin
	cmd.Args = append([]string{straceBin}, StraceArgs(c)...)
	s := &Session{r: r, w: w, env: envFile, started: make(chan struct{}), done: make(chan struct{}), launched: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer r.Close()
		_ = follow(firstRead{r, s.releaseOnceLaunched}, skipExecs, emit, func(pid int) {
			s.root = pid
			close(s.started)
		})
	}()
	return s, nil
}

// firstRead calls opened once the first bytes arrive: strace has opened
// its output by then, and the engine's own end may be closed.
type firstRead struct {
	r      *os.File
	opened func()
}

func (f firstRead) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 {
		f.opened()
	}
	return n, err
}

// Started is closed once strace's first line has arrived; Root then
// gives the pid that line names, strace's child: the process that runs
// the command. Done is closed when strace's output is read to its end
// (strace has exited). Both are nil, and block forever, for a Session
// that does not trace.
func (s *Session) Started() <-chan struct{} { return s.started }

// Root is the pid of the command strace started; read it only after
// Started is closed.
func (s *Session) Root() int { return s.root }

// Done: see Started.
func (s *Session) Done() <-chan struct{} { return s.done }

// Traced reports whether the run really runs under strace.
func (s *Session) Traced() bool { return s != nil && s.untraced == "" }

// Release closes the engine's end of the pipe. Call it once strace has
// certainly opened its output (it has once the command runs), or when
// the command could not start. It is idempotent.
func (s *Session) Release() {
	if s == nil || s.w == nil {
		return
	}
	s.closeW.Do(func() {
		s.w.Close()
		if s.env != nil {
			s.env.Close()
		}
	})
}

// releaseOnceLaunched releases the engine's ends once the backend's start
// is over (Process), or not at all if the start failed (the backend
// releases them itself then).
func (s *Session) releaseOnceLaunched() {
	s.earlyOnce.Do(func() {
		go func() {
			select {
			case <-s.launched:
				s.Release()
			case <-s.done:
			}
		}()
	})
}

// Process wraps p so that Wait returns only once the trace is read to its
// end, and Enforcement says when the run is not traced. A nil Session
// returns p.
func (s *Session) Process(p backends.Process) backends.Process {
	if s == nil {
		return p
	}
	if s.launched != nil {
		s.launchedOnce.Do(func() { close(s.launched) })
	}
	return &tracedProcess{Process: p, s: s}
}

type tracedProcess struct {
	backends.Process
	s *Session
}

func (t *tracedProcess) Wait() (backends.ExitStatus, error) {
	st, err := t.Process.Wait()
	if t.s.Traced() {
		t.s.Release()
		select {
		case <-t.s.done:
		case <-time.After(WaitDrain):
		}
	}
	return st, err
}

// Terminate passes a graceful stop on to the traced process, or kills it
// when it has none.
func (t *tracedProcess) Terminate() error {
	if tm, ok := t.Process.(backends.Terminator); ok {
		return tm.Terminate()
	}
	return t.Process.Kill()
}

func (t *tracedProcess) Enforcement() backends.Enforcement {
	enf := t.Process.Enforcement()
	if !t.s.Traced() {
		enf.Missing = append(append([]string{}, enf.Missing...), NoOutsideTracer, "trace: "+t.s.untraced)
	}
	return enf
}
