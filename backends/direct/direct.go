// Package direct runs a process on the host with no barrier at all. The
// engine uses it only for the documented "off" paths (agent shell and
// scheduler scripts switched off) and for a run that explicitly asks for no
// isolation; the records of such runs say so.
package direct

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Options configure the direct backend.
type Options struct {
	// Reaper is this program's executable, started with ReaperArg as a
	// child subreaper in front of runs for which no cgroup can be made
	// (main passes os.Executable()). Empty: such runs are tracked by
	// their process group only, and their records say so.
	Reaper string
	// Launcher is the envexec launcher (the engine's own executable; main
	// handles envexec.Arg): a traced run's command gets its environment
	// from it, while strace runs with a fixed one. Without it a traced run
	// runs untraced and its record says so.
	Launcher string
	// noCgroup forces the subreaper (tests).
	noCgroup bool
}

// Backend is the no-isolation backend.
type Backend struct{ opts Options }

var (
	_ backends.Backend    = (*Backend)(nil)
	_ backends.Terminator = (*process)(nil)
)

// New returns the direct backend; at most one Options is used.
func New(opts ...Options) *Backend {
	b := &Backend{}
	if len(opts) > 0 {
		b.opts = opts[0]
	}
	return b
}

// Name is "direct".
func (*Backend) Name() string { return "direct" }

// Probe always answers healthy and not isolating.
func (*Backend) Probe(context.Context) backends.Capability {
	return backends.Capability{
		Backend:   "direct",
		State:     backends.Healthy,
		Reason:    "runs code directly on this machine with no barrier: nothing is enforced",
		Isolates:  false,
		Enforces:  []string{},
		CheckedAt: time.Now(),
	}
}

// Start runs spec.Argv in spec.Workspace with spec.Env, in its own process
// group and, where it can, a cgroup of its own (else under a subreaper),
// so that the whole tree ends with the run.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("no command given")
	}
	if len(spec.MaskedRuntimes) > 0 || len(spec.Masked) > 0 {
		// No barrier, no masks: a switched-off runtime would start.
		return nil, fmt.Errorf("refused: %s is switched off, and the direct backend has no barrier to keep the interpreters from starting; use an isolating backend (bwrap, docker), or turn the switch on", backends.RuntimeSwitches(spec.MaskedRuntimes))
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        spec.Argv,
		Env:         spec.Env,
		Dir:         spec.Workspace,
		Stdin:       spec.Stdin,
		SysProcAttr: sysProcAttr(spec.User),
	}
	out, err := pipeOutput(cmd, spec.Stdout, spec.Stderr)
	if err != nil {
		return nil, err
	}
	if spec.Terminal != nil {
		backends.UseTerminal(cmd, spec.Terminal, spec.TerminalFDs)
	}
	// Tracing: with spec.Trace, strace runs the command (trace*.go).
	tr, err := b.traceCommand(cmd, spec)
	if err != nil {
		out.abort()
		return nil, err
	}
	t, err := b.track(cmd, spec)
	if err != nil {
		tr.Release()
		out.abort()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		tr.Release()
		t.release()
		out.abort()
		return nil, fmt.Errorf("starting %s: %w", spec.Argv[0], err)
	}
	t.started(cmd.Process.Pid)
	out.started()
	return traced(tr, &process{cmd: cmd, tree: t, out: out}), nil // tracing (trace*.go)
}

// output copies a run's stdout and stderr through pipes of the backend's
// own, so that the run ends when its command does, not when the last
// process holding its output is gone (one it left behind would hold it
// for ever): Wait kills the rest, then drains the pipes.
type output struct {
	w      []*os.File // the child's ends, closed once it started
	copied sync.WaitGroup
	r      []*os.File
}

// pipeOutput gives cmd a pipe for each of stdout and stderr that is not
// a file already (one pipe when both are the same writer).
func pipeOutput(cmd *exec.Cmd, stdout, stderr io.Writer) (*output, error) {
	o := &output{}
	attach := func(w io.Writer) (io.Writer, error) {
		if w == nil {
			return nil, nil
		}
		if f, ok := w.(*os.File); ok {
			return f, nil
		}
		r, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("making the run's output pipe: %w", err)
		}
		o.w, o.r = append(o.w, pw), append(o.r, r)
		o.copied.Add(1)
		go func() {
			defer o.copied.Done()
			_, _ = io.Copy(w, r)
		}()
		return pw, nil
	}
	var err error
	if cmd.Stdout, err = attach(stdout); err != nil {
		o.abort()
		return nil, err
	}
	if stderr == stdout {
		cmd.Stderr = cmd.Stdout
		return o, nil
	}
	if cmd.Stderr, err = attach(stderr); err != nil {
		o.abort()
		return nil, err
	}
	return o, nil
}

// started closes the child's ends in the engine.
func (o *output) started() {
	for _, w := range o.w {
		w.Close()
	}
}

// abort closes every end: the command did not start.
func (o *output) abort() {
	o.started()
	for _, r := range o.r {
		r.Close()
	}
}

// drain waits until the copies are done, at most d: a process that
// escaped the run's tree and holds its output loses it then.
func (o *output) drain(d time.Duration) {
	done := make(chan struct{})
	go func() { o.copied.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		for _, r := range o.r {
			r.Close()
		}
		<-done
	}
}

// lookPath finds argv0 on the PATH of the run's own environment, not the
// engine's.
func lookPath(argv0 string, env []string) (string, error) {
	for i := len(env) - 1; i >= 0; i-- {
		if len(env[i]) > 5 && env[i][:5] == "PATH=" {
			return lookIn(argv0, env[i][5:])
		}
	}
	return lookIn(argv0, "/usr/local/bin:/usr/bin:/bin")
}

type process struct {
	cmd      *exec.Cmd
	tree     tree
	out      *output
	waitOnce sync.Once
	status   backends.ExitStatus
	err      error
}

func (p *process) Pid() int { return p.cmd.Process.Pid }

func (p *process) Wait() (backends.ExitStatus, error) {
	p.waitOnce.Do(func() {
		err := p.cmd.Wait()
		// The leader is gone; take its tree with it so nothing it
		// started lives on unaccounted.
		kerr := p.tree.kill()
		_ = killGroup(p.cmd.Process.Pid)
		p.out.drain(5 * time.Second)
		p.tree.release()
		p.status, p.err = exitStatus(p.cmd, err)
		if p.err == nil {
			p.err = kerr
		}
	})
	return p.status, p.err
}

func (p *process) Kill() error { return p.tree.kill() }

// Signal sends sig to the command itself.
func (p *process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Terminate sends SIGTERM to the process group.
func (p *process) Terminate() error { return termGroup(p.cmd.Process.Pid) }

func (p *process) Enforcement() backends.Enforcement {
	return backends.Enforcement{
		Isolation: "none",
		Limits:    []string{p.tree.held()},
		Missing:   []string{"no isolation: files, network and limits are not enforced"},
	}
}

func (p *process) Pids() []int {
	if pids := p.tree.pids(); len(pids) > 0 {
		return pids
	}
	return groupPids(p.cmd.Process.Pid)
}

func exitStatus(cmd *exec.Cmd, err error) (backends.ExitStatus, error) {
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return backends.ExitStatus{Code: -1}, err
	}
	if ws.Signaled() {
		return backends.ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal().String()}, nil
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return backends.ExitStatus{Code: ws.ExitStatus()}, err
	}
	return backends.ExitStatus{Code: ws.ExitStatus()}, nil
}
