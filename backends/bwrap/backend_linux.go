package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/idmap"
	"github.com/senclaw/sandbox/backends/limits"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/unixguard"
	"golang.org/x/sys/unix"
)

// hostFacts are facts about the machine that do not change while the
// engine runs: where cgroups can be made; and scan, which finds the
// interpreters on the PATH (DetectHost) and remembers the directories.
type hostFacts struct {
	limits  *limits.Host
	cgroups func() limits.Layout
	scan    *backends.RuntimeScan
}

func newHostFacts(cg *limits.Host) hostFacts {
	if cg == nil {
		cg = limits.NewHost(limits.HostOptions{})
	}
	return hostFacts{limits: cg, cgroups: cg.Layout, scan: &backends.RuntimeScan{}}
}

// extraFDs are the fds bwrap gets through ExtraFiles, in that order (the
// first ExtraFile is fd 3).
func extraFDs() FDs { return FDs{Seccomp: 3, Info: 4, Block: 5} }

// setupTimeout bounds the wait for bwrap's info when ctx has no deadline.
const setupTimeout = 30 * time.Second

// Start runs spec's command under bwrap. ctx bounds the setup only; the
// started process is stopped with Kill. Nothing runs if any part of the
// barrier (namespaces, seccomp, cgroups, rlimits) cannot be set up.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	p, _, err := b.startSandbox(ctx, spec, false)
	return p, err
}

// StartAhead sets spec's sandbox up as Start does, everything of it but
// the command: bwrap runs the forwarder in the command's place, under
// the same barrier, limits and environment, and the forwarder waits for
// the command on a pipe that only Go writes (netfwd's --argv-fd). The
// sandbox then holds the forwarder (a small static program) and nothing
// of the run until Go. A run that needs a terminal or a trace is not
// made ahead.
func (b *Backend) StartAhead(ctx context.Context, spec *backends.Spec) (backends.AheadProcess, error) {
	switch {
	case len(spec.Argv) > 0:
		return nil, errors.New("starting bwrap ahead: the command is handed over later, not in the spec")
	case spec.Terminal != nil || spec.Trace != nil:
		return nil, errors.New("starting bwrap ahead: a run with a terminal or a trace is started with its command")
	case helperPath(spec) == "":
		return nil, errors.New("starting bwrap ahead: it needs the senclaw-netfwd helper (keep it next to senclaw)")
	}
	p, argv, err := b.startSandbox(ctx, spec, true)
	if err != nil {
		return nil, err
	}
	pre := &aheadProcess{Process: p, argv: argv}
	if bp, ok := p.(*process); ok { // always: a run made ahead has no trace
		pre.ended = bp.done
	}
	return pre, nil
}

// aheadProcess is a sandbox StartAhead set up, waiting for its command.
type aheadProcess struct {
	backends.Process
	// ended is closed once bwrap and everything of the sandbox are gone.
	ended <-chan struct{}
	mu    sync.Mutex
	argv  *os.File // nil once handed
}

// What the process started does beyond backends.Process, it does
// started ahead too: the embedded interface alone would hide it.
var (
	_ backends.Signaler   = (*aheadProcess)(nil)
	_ backends.Terminator = (*aheadProcess)(nil)
)

// Signal passes sig to the sandbox's command, as a process Start
// started does (an attached run's caller's signals).
func (p *aheadProcess) Signal(sig syscall.Signal) error {
	s, ok := p.Process.(backends.Signaler)
	if !ok {
		return errors.New("this sandbox passes no signal")
	}
	return s.Signal(sig)
}

// Terminate stops the sandbox gracefully, as a process Start started
// is stopped.
func (p *aheadProcess) Terminate() error {
	if t, ok := p.Process.(backends.Terminator); ok {
		return t.Terminate()
	}
	return p.Kill()
}

// argvTimeout bounds the handing over of a command: the forwarder reads
// it as it comes, so only a sandbox that is stuck takes longer.
const argvTimeout = setupTimeout

// Go writes argv to the forwarder and closes the pipe: the forwarder
// reads to its end, then execs the command. The write holds no lock:
// Kill ends a sandbox that does not read (the write then fails), and a
// command cut short by that, or by the deadline, is refused whole by
// the forwarder (netfwd.ReadArgv).
func (p *aheadProcess) Go(argv []string) error {
	b, err := netfwd.EncodeArgv(argv)
	if err != nil {
		return err
	}
	p.mu.Lock()
	w := p.argv
	p.argv = nil
	p.mu.Unlock()
	if w == nil {
		return errors.New("this sandbox was given its command already, or given up")
	}
	_ = w.SetWriteDeadline(time.Now().Add(argvTimeout))
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("handing the command to the sandbox made ahead: %w", err)
	}
	return nil
}

// Waiting reports whether the sandbox is there and still waits for its
// command: not once Go handed it one, Kill gave it up, or it ended.
func (p *aheadProcess) Waiting() bool {
	p.mu.Lock()
	w := p.argv
	p.mu.Unlock()
	if w == nil {
		return false
	}
	select {
	case <-p.ended:
		return false
	default:
	}
	// The forwarder's end of the pipe closes as it dies, before bwrap is
	// reaped: a pipe with no reader left polls POLLERR on its write end.
	return !noReader(w)
}

// noReader reports whether the pipe w writes to has no reader left.
func noReader(w *os.File) bool {
	raw, err := w.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	_ = raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			gone = fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
		}
	})
	return gone
}

// Kill ends the sandbox, and with the pipe closed a forwarder that had
// no command yet runs none.
func (p *aheadProcess) Kill() error {
	p.mu.Lock()
	if p.argv != nil {
		p.argv.Close()
		p.argv = nil
	}
	p.mu.Unlock()
	return p.Process.Kill()
}

// startSandbox is Start; with ahead, the command is left out and
// startSandbox also returns the pipe it is to be written to.
//
// A start whose copy of the host's mounts met one going away (another
// run's tmpfs workspace unmounted while bwrap made its read-only view of
// the root), or a hidden path's folder removed meanwhile, is made again,
// whole, up to setupTries times: nothing of the sandbox ran, and bwrap's
// message stayed out of the run's output.
func (b *Backend) startSandbox(ctx context.Context, spec *backends.Spec, ahead bool) (backends.Process, *os.File, error) {
	for try := 1; ; try++ {
		p, argv, err := b.startOnce(ctx, spec, ahead)
		if err == nil || try == setupTries || !mountWentAway(err) || ctx.Err() != nil {
			return p, argv, err
		}
		b.log.Info("A mount went away while bwrap copied the host's; the sandbox is made again.", "run", spec.RunID, "try", try, "err", err)
	}
}

// setupTries bounds the starts of one sandbox (startSandbox).
const setupTries = 3

// mountWentAway reports whether err is bwrap failing on a mount of the
// host that disappeared while it remounted the copy of a tree read-only
// ("Can't bind mount /oldroot/ on /newroot/: Unable to apply mount
// flags: remount ...: Invalid argument", or No such file or directory).
func mountWentAway(err error) bool {
	var se *SetupError
	var ran commandMayHaveRun
	if !errors.As(err, &se) || errors.As(err, &ran) {
		return false
	}
	m := se.Message
	gone := strings.HasSuffix(m, "Invalid argument") || strings.HasSuffix(m, "No such file or directory")
	// A hidden path's folder removed between the look at the host and
	// bwrap's mask of it (a home deleted by userdel): bwrap cannot make
	// the mask's mount point in the read-only copy. A new try looks again.
	vanished := strings.HasPrefix(m, "bwrap: Can't mkdir ") &&
		(strings.HasSuffix(m, "Read-only file system") || strings.HasSuffix(m, "No such file or directory"))
	return strings.Contains(m, "Unable to apply mount flags: remount") && gone || vanished
}

// commandMayHaveRun is a start that failed once the command could have
// run (its setup was through): whatever its message, it is not made again.
type commandMayHaveRun struct{ error }

func (e commandMayHaveRun) Unwrap() error { return e.error }

// startOnce is one try of startSandbox.
func (b *Backend) startOnce(ctx context.Context, spec *backends.Spec, ahead bool) (backends.Process, *os.File, error) {
	checked := spec
	if ahead {
		c := *spec
		c.Argv = []string{netfwd.BinaryPath}
		checked = &c
	}
	if err := validate(checked); err != nil {
		return nil, nil, fmt.Errorf("starting bwrap: %w", err)
	}
	cred, err := credential(spec.User)
	if err != nil {
		return nil, nil, err
	}
	bin, err := b.binary()
	if err != nil {
		return nil, nil, err
	}
	prog, err := b.seccomp()
	if idmapped(spec) {
		prog, err = b.noSetID()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("starting bwrap: %w", err)
	}
	runID := spec.RunID
	if runID == "" {
		runID = "run-" + limits.RandomID()
	}
	layout := limits.Layout{}
	if !b.noCgroups {
		layout = b.host.cgroups()
	}
	// The run's cgroups are made while bwrap builds its namespaces: bwrap
	// waits on the block pipe before anything of the sandbox runs, and
	// nothing goes on without the plan.
	type planned struct {
		plan *limits.Plan
		err  error
	}
	ready := make(chan planned, 1)
	go func() {
		plan, err := limits.NewPlan(layout, spec.SandboxID, runID, spec.Limits)
		ready <- planned{plan, err}
	}()
	var plan *limits.Plan
	wait := sync.OnceValues(func() (*limits.Plan, error) {
		r := <-ready
		plan = r.plan
		return r.plan, r.err
	})
	var argvR, argvW *os.File
	if ahead {
		if argvR, argvW, err = os.Pipe(); err != nil {
			if plan, _ := wait(); plan != nil && plan.Cgroups != nil {
				_ = plan.Cgroups.Remove()
			}
			return nil, nil, fmt.Errorf("starting bwrap: creating the command's pipe: %w", err)
		}
		defer argvR.Close() // bwrap has its copy once launched
	}
	p, err := b.launch(ctx, spec, bin, prog, cred, wait, argvR)
	if err != nil {
		if argvW != nil {
			argvW.Close()
		}
		if plan == nil {
			// launch failed before it waited for the plan.
			plan, _ = wait()
		}
		if plan != nil && plan.Cgroups != nil {
			_ = plan.Cgroups.KillAll()
			_ = plan.Cgroups.Remove()
		}
		return nil, nil, err
	}
	return p, argvW, nil
}

// launch starts bwrap, waits for its child, applies the limits and lets it
// go on.
func (b *Backend) launch(ctx context.Context, spec *backends.Spec, bin string, prog []byte,
	cred *syscall.Credential, limits func() (*limits.Plan, error), argv *os.File) (backends.Process, error) {
	// The child's ends are closed here once bwrap has them (or on error).
	var childEnds []*os.File
	defer func() { closeAll(childEnds) }()
	secFD, err := seccompMemfd(prog, spec.RunID)
	if err != nil {
		return nil, err
	}
	childEnds = append(childEnds, secFD)
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating info pipe: %w", err)
	}
	defer infoR.Close()
	childEnds = append(childEnds, infoW)
	blockR, blockW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating block pipe: %w", err)
	}
	defer blockW.Close()
	childEnds = append(childEnds, blockR)
	fds := extraFDs()
	var attach []idmap.Attach
	var idmapped []string // what the idmapped mounts enforce, in words
	if spec.WorkspaceExact || spec.WorkspaceIDMap {
		h, err := openChecked(spec.Workspace, "the workspace")
		if err != nil {
			return nil, err
		}
		if spec.WorkspaceIDMap {
			// The launcher attaches it, as an idmapped mount's below.
			var mapping idmap.Mapping
			if h, mapping, err = b.idmapMount(h, cred, spec); err != nil {
				return nil, err
			}
			attach = append(attach, idmap.Attach{FD: 3 + len(childEnds), Point: workspacePoint(spec)})
			idmapped = append(idmapped, idmappedWorkspaceLine(spec.Workspace, mapping))
		} else {
			fds.Workspace = 3 + len(childEnds)
		}
		childEnds = append(childEnds, h)
	}
	for i, m := range spec.Mounts {
		h, err := openChecked(m.Source, "the mount source")
		if err != nil {
			return nil, err
		}
		if m.IDMap {
			// The launcher attaches it from the detached idmapped mount.
			var mapping idmap.Mapping
			if h, mapping, err = b.idmapMount(h, cred, spec); err != nil {
				return nil, err
			}
			attach = append(attach, idmap.Attach{FD: 3 + len(childEnds), Point: i})
			idmapped = append(idmapped, idmappedLine(m.Target, m.ReadOnly, mapping))
		}
		fds.Mounts = append(fds.Mounts, 3+len(childEnds))
		childEnds = append(childEnds, h)
	}
	for i, c := range spec.Caches {
		h, err := openChecked(c.Source, "the package cache")
		if err != nil {
			return nil, err
		}
		if c.IDMap {
			if h, _, err = b.idmapMount(h, cred, spec); err != nil {
				return nil, err
			}
			attach = append(attach, idmap.Attach{FD: 3 + len(childEnds), Point: cachePoint(spec, i)})
			fds.Caches = append(fds.Caches, -1)
		} else {
			fds.Caches = append(fds.Caches, 3+len(childEnds))
		}
		childEnds = append(childEnds, h)
	}
	for _, p := range spec.Protected {
		if _, ok := idmappedPoint(spec, p); ok {
			// Bound from the idmapped view (Args), which the sandbox user
			// can walk; a handle of the host's, below a folder it cannot,
			// bwrap cannot bind. It is opened all the same, checked as
			// every protected path is: a link put there refuses the run.
			if h, err := openProtected(p); err != nil {
				return nil, err
			} else {
				h.Close()
			}
			fds.Protected = append(fds.Protected, -1)
			continue
		}
		h, err := openProtected(p)
		if err != nil {
			return nil, err
		}
		fds.Protected = append(fds.Protected, 3+len(childEnds))
		childEnds = append(childEnds, h)
	}
	if spec.Terminal != nil {
		if spec.Net == nil && spec.Helper == "" {
			return nil, errors.New("starting bwrap: a run with a terminal needs the senclaw-netfwd helper (keep it next to senclaw)")
		}
		// bwrap's own 0, 1 and 2 stay the pipes, so that its setup errors
		// are still read; the helper inside puts the terminal in place.
		// A copy: the caller keeps its own and closes it when it likes.
		t, err := dupCloexec(spec.Terminal)
		if err != nil {
			return nil, fmt.Errorf("starting bwrap: passing the terminal: %w", err)
		}
		fds.Terminal = 3 + len(childEnds)
		childEnds = append(childEnds, t)
	}
	// The Unix socket guard: the engine loads it itself where no forwarder
	// runs anyway (direct), else the forwarder hands it over (guard).
	// Its thread joins the run's cgroups while the command is made.
	direct, err := directUnixGuard(spec, bin, limits)
	if err != nil {
		return nil, err
	}
	var guard *unixguard.Handoff
	if direct != nil {
		defer direct.Close()
	} else if guard, err = offerUnixGuard(spec); err != nil {
		return nil, err
	}
	if guard != nil {
		defer guard.Close()
		fds.UnixGuard = 3 + len(childEnds)
		childEnds = append(childEnds, guard.ChildEnd())
	}
	ports, err := offerPrivilegedPorts(spec)
	if err != nil {
		return nil, err
	}
	if ports != nil {
		defer ports.Close()
		fds.Ports = 3 + len(childEnds)
		childEnds = append(childEnds, ports.ChildEnd())
	}
	if argv != nil {
		// The forwarder reads the command from it (StartAhead).
		d, err := dupCloexec(argv)
		if err != nil {
			return nil, fmt.Errorf("starting bwrap: passing the command's pipe: %w", err)
		}
		fds.Argv = 3 + len(childEnds)
		childEnds = append(childEnds, d)
	}
	if err := closeOnExecInherited(); err != nil {
		return nil, fmt.Errorf("protecting inherited file descriptors: %w", err)
	}
	// bwrap reads its options, with the host paths and the run's
	// environment, from a memfd: its command line (pid 1's inside, and
	// what ps shows on the host) is "--args N --" and the command.
	host := detectHost(spec, b.host.scan)
	host.IDMapDir = b.opts.IDMapDir
	if direct != nil {
		// A fresh namespace made ahead, which the thread that forks bwrap
		// joins (directGuard.fork), else bwrap's own.
		direct.ahead = netns
		if direct.netns = direct.ahead.take(); direct.netns != nil {
			host.JoinedNetwork = true
		}
	}
	argsFD, err := argsMemfd(Flags(spec, host, fds))
	if err != nil {
		return nil, err
	}
	childEnds = append(childEnds, argsFD)
	// bwrap's own messages come before the command runs: held until the
	// setup is known to have gone well, so that a failed one (told by the
	// start's error, and perhaps tried again) is not in the run's output.
	stderr := newHeldWriter(spec.Stderr)
	cmd := exec.Command(bin, append([]string{"--args", strconv.Itoa(2 + len(childEnds)), "--"}, Command(spec, fds)...)...)
	// bwrap runs on the host, outside every namespace it makes: it starts
	// with the fixed helper environment (also what pid 1 inside shows in
	// /proc/1/environ), and only the command gets the run's, by --setenv.
	cmd.Env = backends.HelperEnv()
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, stderr
	cmd.ExtraFiles = childEnds
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	cmd.WaitDelay = 5 * time.Second
	if len(attach) > 0 {
		b.throughLauncher(cmd, attach, cred)
	}
	// Tracing: with spec.Trace, strace runs bwrap (trace_linux.go).
	tr, err := traceCommand(cmd, spec)
	if err != nil {
		return nil, err
	}
	defer tr.Release()
	// end trace
	inside, err := b.start(cmd, spec, limits, direct)
	if err != nil {
		stderr.release(false)
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return nil, fmt.Errorf("starting bwrap: %w", err)
	}
	closeAll(childEnds) // bwrap has its copies; without ours, EOF means bwrap is gone
	childEnds = nil
	plan, err := limits()
	if err == nil {
		plan.Inside = inside
	}
	if err != nil {
		// bwrap is blocked before the sandbox runs anything: end it.
		stderr.release(false)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("starting bwrap: %w", err)
	}
	p := newProcess(cmd, plan, stderr, spec, b.log)
	p.enf.Limits = append(p.enf.Limits, idmapped...)

	childPid, err := readInfo(ctx, infoR)
	if err == nil {
		// From here Kill reaches the child, which would otherwise go on
		// (unlimited) once the block pipe closes.
		p.watchChild(childPid)
		if direct != nil {
			// Still blocked: it is bwrap's child, whatever comes later.
			err = direct.Watch(childPid)
		}
	}
	if err == nil {
		// Only the child needs the limits: everything the sandbox runs
		// descends from it, while the outer bwrap only waits for it.
		err = plan.Apply(childPid)
	}
	if err == nil {
		// The command and bwrap's init are forked only after this byte,
		// so they start inside the cgroups and under the rlimits.
		_, err = blockW.Write([]byte{1})
	}
	if err == nil && guard == nil {
		// With the guard, its handoff is the sign that setup went well
		// (bwrap ran the forwarder), and a failed setup ends the wait for
		// it: acceptUnixGuard says why.
		err = waitConsumed(ctx, blockW, p.done)
	}
	// From here the command may have run, and what it wrote may be taken
	// for bwrap's own message: a start failing now is never made again.
	ran := err == nil && guard == nil
	if err == nil && direct != nil {
		err = superviseUnixGuard(direct, p) // the Unix socket guard
	}
	if err == nil && guard != nil {
		err = acceptUnixGuard(ctx, guard, childPid, p) // the Unix socket guard
		ran = err == nil
	}
	if err == nil && ports != nil {
		err = bindPrivilegedPorts(ctx, ports, childPid, p)
	}
	if err != nil {
		gone := exiting(err)
		if gone {
			// bwrap failed during setup and is on its way out: let it say
			// why (exit 1 with "bwrap: ...") rather than kill it first.
			select {
			case <-p.done:
			case <-time.After(2 * time.Second):
			}
		}
		if gone && setupDone(p.done, stderr) {
			// bwrap read the block byte, set the sandbox up and could not
			// exec the command, all before the wait saw the byte go: the
			// run's own outcome (127, 126), which Wait reports.
			stderr.release(true)
			return tr.Process(p), nil
		}
		stderr.release(false)
		_ = p.Kill()
		_, werr := p.Wait()
		var failed error = fmt.Errorf("starting bwrap: %w", err)
		var se *SetupError
		if errors.As(werr, &se) {
			failed = se
		}
		if ran {
			failed = commandMayHaveRun{failed}
		}
		return nil, failed
	}
	stderr.release(true)
	return tr.Process(p), nil // Wait drains the trace
}

// start starts cmd (bwrap). A run's cgroups are new and its own (a
// persistent sandbox's runs each have theirs, under the sandbox's):
// bwrap is born in them (limits.Cgroups.StartInside), which spares the
// run the wait of moving its first process there afterwards (on cgroup
// v1 an RCU grace period: 10 ms in one run out of two here). It reports
// whether bwrap was. With direct, the same happens on a thread of its
// own that has joined the cgroups already and loads the Unix socket guard
// first (directGuard.prepare and fork).
func (b *Backend) start(cmd *exec.Cmd, spec *backends.Spec, limits func() (*limits.Plan, error), direct *directGuard) (bool, error) {
	fork := func(start func() error) (bool, error) {
		if spec.Trace != nil {
			return false, start()
		}
		plan, err := limits()
		if err != nil || plan.Cgroups == nil {
			return false, start()
		}
		return plan.Cgroups.StartInside(start)
	}
	if direct != nil {
		return direct.fork(cmd)
	}
	return fork(cmd.Start)
}

// exiting reports whether err means bwrap went away during setup: the
// block pipe lost its reader, or bwrap exited before reading it.
// setupDone reports whether bwrap, already gone, got as far as exec'ing
// the command: its stderr begins with its failed execvp line.
func setupDone(done <-chan struct{}, stderr *headWriter) bool {
	select {
	case <-done:
		return stderr.execLine()
	default:
		return false
	}
}

func exiting(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, errSetupExit)
}

var errSetupExit = errors.New("bwrap exited during setup")

// waitConsumed waits until bwrap has read the block byte. bwrap builds the
// mounts before it reads it (FIONREAD, alias TIOCINQ, on the pipe), so a setup failure shows up here (bwrap exits)
// rather than after Start has returned.
func waitConsumed(ctx context.Context, w *os.File, exited <-chan struct{}) error {
	raw, err := w.SyscallConn()
	if err != nil {
		return fmt.Errorf("waiting for bwrap: %w", err)
	}
	// One look, one timer for every wait: it polls a few times a run.
	var n int
	look := func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }
	var wait *time.Timer
	deadline := time.Now().Add(setupTimeout)
	for delay := 50 * time.Microsecond; ; delay = min(delay*3/2, 200*time.Microsecond) {
		n = -1
		cerr := raw.Control(look)
		if cerr != nil || err != nil {
			return fmt.Errorf("waiting for bwrap: %w", errors.Join(cerr, err))
		}
		if n == 0 {
			return nil
		}
		if wait == nil {
			wait = time.NewTimer(delay)
			defer wait.Stop()
		} else {
			wait.Reset(delay)
		}
		select {
		case <-exited:
			// A quick command can read the byte, run and exit between two
			// looks: only an unread byte means setup failed.
			if cerr := raw.Control(look); cerr == nil && err == nil && n == 0 {
				return nil
			}
			return errSetupExit
		case <-ctx.Done():
			return fmt.Errorf("waiting for bwrap: %w", ctx.Err())
		case <-wait.C:
		}
		if time.Now().After(deadline) {
			return errors.New("waiting for bwrap: setup took too long")
		}
	}
}

// readInfo reads {"child-pid": N} from bwrap's info pipe.
func readInfo(ctx context.Context, r io.Reader) (int, error) {
	type result struct {
		pid int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var info struct {
			ChildPid int `json:"child-pid"`
		}
		err := json.NewDecoder(r).Decode(&info)
		if err == nil && info.ChildPid <= 0 {
			err = errors.New("no child-pid in bwrap's info")
		}
		ch <- result{info.ChildPid, err}
	}()
	timer := time.NewTimer(setupTimeout)
	defer timer.Stop()
	select {
	case res := <-ch:
		if res.err != nil {
			return 0, fmt.Errorf("reading bwrap's info: %w", res.err)
		}
		return res.pid, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("waiting for bwrap: %w", ctx.Err())
	case <-timer.C:
		return 0, errors.New("waiting for bwrap: no answer in time")
	}
}

// credential decides who bwrap runs as. A root engine never runs a sandbox
// as root: bwrap must run unprivileged so that it builds the user namespace
// itself and the sandbox holds no host privileges.
func credential(u *backends.Credential) (*syscall.Credential, error) {
	euid, egid := os.Geteuid(), os.Getegid()
	if euid == 0 {
		if u == nil || u.UID == 0 || u.GID == 0 {
			return nil, &RefusedError{Reason: "the engine runs as root and the sandbox user is root or unset; pass an unprivileged Spec.User (e.g. 65534)"}
		}
		return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}, nil
	}
	if u == nil || (int(u.UID) == euid && int(u.GID) == egid) {
		return nil, nil
	}
	return nil, &RefusedError{Reason: fmt.Sprintf("the engine runs as uid %d and cannot start a sandbox as uid %d", euid, u.UID)}
}

// binary finds bwrap.
func (b *Backend) binary() (string, error) {
	// The path found before, while it is still an executable file: the
	// PATH is searched again only when it is not (every run used to).
	name := b.opts.Binary
	if name == "" {
		name = "bwrap"
	}
	if f := b.found.Load(); f != nil && f.name == name {
		var st unix.Stat_t
		if unix.Stat(f.path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 {
			return f.path, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("finding bwrap: %w (install it with `apt-get install bubblewrap`)", err)
	}
	b.found.Store(&foundBinary{name: name, path: p})
	return p, nil
}

// seccompMemfd returns a memfd holding prog, positioned at its start.
func seccompMemfd(prog []byte, runID string) (*os.File, error) {
	m, err := backends.Memfd(seccompMemfdName(runID), prog)
	if err != nil {
		return nil, fmt.Errorf("writing seccomp program: %w", err)
	}
	return m, nil
}

// argsMemfd returns a memfd holding bwrap's options for --args.
func argsMemfd(opts []string) (*os.File, error) {
	data, err := ArgsData(opts)
	if err != nil {
		return nil, fmt.Errorf("starting bwrap: %w", err)
	}
	m, err := backends.Memfd("senclaw-bwrap-args", data)
	if err != nil {
		return nil, fmt.Errorf("writing bwrap's options: %w", err)
	}
	return m, nil
}

// dupCloexec returns a close-on-exec copy of f.
func dupCloexec(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// GivesTerminals reports that Start honours Spec.Terminal.
func (b *Backend) GivesTerminals() bool { return true }

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// openChecked opens a directory to bind (what names it: "the workspace",
// "the mount source") as an O_PATH handle for bwrap's --bind-fd, and
// checks that it is the directory that was validated: such paths are
// stored canonical (no symlink in them), so a handle whose real path
// differs went through a symlink put there since, perhaps by sandboxed
// code that may write above it. Such a run is refused; nothing is bound.
func openChecked(dir, what string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("refused: %s %s cannot be opened (%v); check that it still exists", what, dir, err)
	}
	h := os.NewFile(uintptr(fd), dir)
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("refused: checking %s %s: %v", what, dir, err)
	}
	if real != filepath.Clean(dir) {
		h.Close()
		return nil, fmt.Errorf("refused: %s %s now leads to %s (a symlink was put in its path since it was checked); nothing was bound. Remove the symlink, or give the directory again", what, dir, real)
	}
	return h, nil
}

// openProtected opens the protected path p (a file or a directory the
// engine checked) without following a link on its way or at its end, for
// --ro-bind-fd: a link put there since refuses the run.
func openProtected(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("refused: %s, which must stay read-only for the sandbox, cannot be opened (%v); nothing ran. Run again", p, err)
	}
	h := os.NewFile(uintptr(fd), p)
	var st unix.Stat_t
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err != nil || real != p || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		h.Close()
		return nil, fmt.Errorf("refused: %s, which must stay read-only for the sandbox, now is or goes through a symbolic link (one was put there since it was checked); nothing ran. Remove the link", p)
	}
	return h, nil
}
