package bwrap

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/unix"
)

// process is a running bwrap sandbox. A goroutine reaps bwrap, makes sure
// the whole tree is gone and removes the cgroups; Wait only waits for it.
type process struct {
	cmd    *exec.Cmd
	plan   *limitPlan
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

func newProcess(cmd *exec.Cmd, plan *limitPlan, stderr *headWriter, spec *backends.Spec, log *slog.Logger) *process {
	p := &process{cmd: cmd, plan: plan, stderr: stderr, childFD: -1, done: make(chan struct{}), log: log}
	p.enf = backends.Enforcement{Isolation: Name, Limits: plan.applied, Missing: plan.missing}
	if spec.Net != nil {
		p.enf.Limits = append(p.enf.Limits, netProxied)
		p.enf.Missing = append(p.enf.Missing, netUDP)
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
	if p.plan.cg != nil {
		p.plan.cg.signal()
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
	if p.plan.cg != nil {
		return p.plan.cg.procs()
	}
	return descendants(p.cmd.Process.Pid)
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
	cg := p.plan.cg
	if cg != nil {
		errs = append(errs, cg.killAll())
		oom = cg.oomKilled()
	}
	p.status, p.err = p.exitStatus(waitErr, oom)
	if p.err == nil {
		p.err = errors.Join(errs...)
	}
	// Every process is gone: the caller may go on while the empty
	// cgroups are removed (the kernel can take a while to release them).
	close(p.done)
	if cg != nil {
		if err := cg.remove(); err != nil {
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
	ws := ps.Sys().(syscall.WaitStatus)
	var st backends.ExitStatus
	switch {
	case ws.Signaled():
		st = backends.ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal().String()}
	default:
		st.Code = ws.ExitStatus()
		if st.Code > 128 && st.Code < 128+65 {
			st.Signal = syscall.Signal(st.Code - 128).String()
		}
	}
	switch {
	case oom && st.Code != 0:
		st.Signal = "killed: out of memory"
	case p.killed.Load() && st.Code != 0:
		st.Signal = "killed"
	}
	// bwrap reports its own failures as exit 1 with "bwrap: ..." before
	// the command ran (or when the command cannot be executed).
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
