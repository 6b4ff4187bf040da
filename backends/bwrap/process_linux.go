package bwrap

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
	"golang.org/x/sys/unix"
)

// process is a running bwrap sandbox. A goroutine reaps bwrap, makes sure
// the whole tree is gone and removes the cgroups; Wait only waits for it.
type process struct {
	cmd    *exec.Cmd
	plan   *limits.Plan
	stderr *headWriter
	enf    backends.Enforcement
	killed atomic.Bool
	log    *slog.Logger

	mu       sync.Mutex
	childFD  int // pidfd of bwrap's child (pid 1 of the sandbox), or -1
	childPid int // its host pid, 0 until known

	done   chan struct{}
	status backends.ExitStatus
	err    error
}

var (
	_ backends.Process    = (*process)(nil)
	_ backends.Terminator = (*process)(nil)
)

func newProcess(cmd *exec.Cmd, plan *limits.Plan, stderr *headWriter, spec *backends.Spec, log *slog.Logger) *process {
	p := &process{cmd: cmd, plan: plan, stderr: stderr, childFD: -1, done: make(chan struct{}), log: log}
	p.enf = backends.Enforcement{Isolation: Name, Limits: plan.Applied, Missing: plan.Missing}
	if spec.Net != nil {
		p.enf.Limits = append(p.enf.Limits, netProxied)
	} else {
		p.enf.Limits = append(p.enf.Limits, netNone)
	}
	go p.reap()
	return p
}

// watchChild keeps a pidfd of bwrap's child, so it can be killed and
// waited for without pid reuse races.
func (p *process) watchChild(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.childFD, p.childPid = fd, pid
	p.mu.Unlock()
}

var _ backends.Signaler = (*process)(nil)

// Signal sends sig to the command: pid 2 of the sandbox's pid namespace,
// the first process bwrap's init starts (the command itself, or the
// helper in front of it, which passes signals on). Not to init: the init
// of a pid namespace drops the signals it has no handler for. The target
// is held by a pidfd and checked again once held, so a pid reused in the
// meantime is never signalled.
func (p *process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	init := p.childPid
	p.mu.Unlock()
	if init == 0 {
		return errors.New("the sandbox has not started its command yet")
	}
	for _, pid := range limits.Descendants(init) {
		if !isCommand(pid, init) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		defer unix.Close(fd)
		if !isCommand(pid, init) {
			continue
		}
		return unix.PidfdSendSignal(fd, sig, nil, 0)
	}
	return errors.New("the sandbox's command has already exited")
}

// isCommand reports whether pid is init's child with pid 2 in the
// sandbox's namespace.
func isCommand(pid, init int) bool {
	if ppid, ok := limits.ParentPid(pid); !ok || ppid != init {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			return len(f) > 1 && f[len(f)-1] == "2"
		}
	}
	return false
}

// Pid returns bwrap's host pid.
func (p *process) Pid() int { return p.cmd.Process.Pid }

// Enforcement says what the process really got.
func (p *process) Enforcement() backends.Enforcement { return p.enf }

// Wait waits until bwrap and every process of the sandbox are gone.
func (p *process) Wait() (backends.ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

// Kill kills the whole tree. It is idempotent and safe with Wait.
func (p *process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.killed.Store(true)
	if p.plan.Cgroups != nil {
		p.plan.Cgroups.Signal()
	}
	p.mu.Lock()
	if p.childFD >= 0 {
		// Killing pid 1 of the sandbox's pid namespace kills all of it.
		_ = unix.PidfdSendSignal(p.childFD, unix.SIGKILL, nil, 0)
	}
	p.mu.Unlock()
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Terminate sends SIGTERM to every process of the sandbox but bwrap's own
// two (the outer bwrap and pid 1 inside, which pass no signals on and
// would take the tree down at once): the command and everything it
// started get the chance to end cleanly. Kill follows if they do not.
func (p *process) Terminate() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.mu.Lock()
	child := p.childPid
	p.mu.Unlock()
	for _, pid := range p.Pids() {
		if pid == p.cmd.Process.Pid || pid == child {
			continue
		}
		if err := unix.Kill(pid, unix.SIGTERM); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}

// Pids lists the tree's host pids: the run's cgroup members, or bwrap and
// its descendants.
func (p *process) Pids() []int {
	select {
	case <-p.done:
		return nil
	default:
	}
	if p.plan.Cgroups != nil {
		return p.plan.Cgroups.Procs()
	}
	return limits.Descendants(p.cmd.Process.Pid)
}

func (p *process) reap() {
	waitErr := p.cmd.Wait()
	var errs []error
	// bwrap is gone; its child dies with it (--die-with-parent) and takes
	// the pid namespace along. Make sure, then empty the cgroups.
	p.mu.Lock()
	if p.childFD >= 0 {
		_ = unix.PidfdSendSignal(p.childFD, unix.SIGKILL, nil, 0)
		waitPidfd(p.childFD, 10*time.Second)
		unix.Close(p.childFD)
		p.childFD = -1
	}
	p.mu.Unlock()
	oom := false
	cg := p.plan.Cgroups
	if cg != nil {
		errs = append(errs, cg.KillAll())
		oom = cg.OOMKilled()
	}
	p.status, p.err = p.exitStatus(waitErr, oom)
	if p.err == nil {
		p.err = errors.Join(errs...)
	}
	// Every process is gone: the caller may go on while the empty
	// cgroups are removed (the kernel can take a while to release them).
	close(p.done)
	if cg != nil {
		if err := cg.Remove(); err != nil {
			p.log.Warn("A run's cgroups could not be removed.", "err", err)
		}
	}
}

// exitStatus maps bwrap's end to the command's. bwrap exits with the
// command's code, or 128+signal when the command died by a signal.
func (p *process) exitStatus(waitErr error, oom bool) (backends.ExitStatus, error) {
	ps := p.cmd.ProcessState
	if ps == nil {
		return backends.ExitStatus{Code: -1}, waitErr
	}
	st := backends.StatusOf(ps, oom, p.killed.Load())
	// bwrap reports its own failures as exit 1 with "bwrap: ..." before
	// the command ran (or when the command cannot be executed: that one
	// is the command's failure, told as a shell tells it).
	p.stderr.finish()
	if code := p.stderr.failedExec(); code != 0 && st.Code == 1 {
		return backends.ExitStatus{Code: code}, nil
	}
	if msg := p.stderr.head(); st.Code == 1 && strings.HasPrefix(msg, "bwrap: ") {
		line, _, _ := strings.Cut(msg, "\n")
		return st, &SetupError{Message: line}
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return st, waitErr
	}
	return st, nil
}

// waitPidfd waits until the process behind fd has exited.
func waitPidfd(fd int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		if n > 0 || (err != nil && !errors.Is(err, unix.EINTR)) {
			return
		}
	}
}
