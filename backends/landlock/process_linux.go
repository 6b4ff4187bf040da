package landlock

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"slices"
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

// process is a running Landlock sandbox: the command the helper became
// (or strace, when traced). A goroutine reaps it, makes sure the whole
// tree is gone, closes the proxy door and removes the cgroups; Wait only
// waits for it.
type process struct {
	cmd    *exec.Cmd
	leader int
	plan   *limits.Plan
	prep   *prepared
	enf    backends.Enforcement
	killed atomic.Bool
	log    *slog.Logger

	mu sync.Mutex
	// signalled are the pids Kill found without a cgroup.
	signalled []int

	done   chan struct{}
	status backends.ExitStatus
	err    error
}

var _ backends.Process = (*process)(nil)

// newProcess watches cmd; leader is the pid of the helper that becomes
// the command (cmd's own, unless strace runs it).
func newProcess(cmd *exec.Cmd, leader int, plan *limits.Plan, prep *prepared, log *slog.Logger) *process {
	if plan == nil {
		plan = &limits.Plan{}
	}
	p := &process{cmd: cmd, leader: leader, plan: plan, prep: prep, done: make(chan struct{}), log: log}
	p.enf = backends.Enforcement{Isolation: Name,
		Limits:  append(enforced(prep), plan.Applied...),
		Missing: append(plan.Missing, prep.missing...)}
	if plan.Cgroups == nil {
		p.enf.Limits = append(p.enf.Limits, supervised)
		if slices.ContainsFunc(plan.Rlimits(), func(r limits.Rlimit) bool { return r.Resource == unix.RLIMIT_NPROC }) {
			p.enf.Missing = append(p.enf.Missing, nprocShared)
		}
	}
	// The pidfd first: until reap waits for it, the command stays a
	// zombie at worst, so the pid cannot be gone or taken yet.
	pidfd, err := unix.PidfdOpen(leader, unix.PIDFD_NONBLOCK)
	go p.reap()
	if err == nil {
		go p.endWithLeader(pidfd)
	}
	return p
}

// endWithLeader ends the whole run when the command exits, as a pid
// namespace ends with its init under bwrap: nothing it left running
// outlives it (the engine runs background work as runs of their own),
// and the output pipes its children held close, so Wait returns at once.
// The wait is the engine's poller on a pidfd, no thread per run.
func (p *process) endWithLeader(fd int) {
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	waited := false
	// Readable once the process has exited; it is not reaped by this.
	_ = rc.Read(func(uintptr) bool {
		done := waited
		waited = true
		return done
	})
	select {
	case <-p.done:
	default:
		p.signalAll()
	}
}

// Pid returns the host pid of the command (of strace, when traced).
func (p *process) Pid() int { return p.cmd.Process.Pid }

// Enforcement says what the process really got.
func (p *process) Enforcement() backends.Enforcement { return p.enf }

var _ backends.Signaler = (*process)(nil)

// Signal sends sig to the command: the helper became it, or, supervising
// a run without a cgroup, passes the signal on to it. os.Process holds
// the pid by a pidfd, so a pid reused since is never signalled.
func (p *process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return os.ErrProcessDone
	default:
	}
	if p.leader != p.cmd.Process.Pid {
		return errors.New("a traced run is not signalled through strace")
	}
	return p.cmd.Process.Signal(sig)
}

// Wait waits until the command and every process of the run are gone.
func (p *process) Wait() (backends.ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

// Kill kills the whole run: every process of its cgroups, else its
// session's process group and what descends from the command. It is
// idempotent and safe with Wait.
func (p *process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.killed.Store(true)
	p.signalAll()
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// signalAll sends SIGKILL to every process of the run once and returns
// the pids it found (none with cgroups: they kill and wait by themselves).
func (p *process) signalAll() []int {
	if cg := p.plan.Cgroups; cg != nil {
		cg.Signal()
		return nil
	}
	// Once the command is gone its orphans belong to init and are no
	// longer found through it: keep what each call found. Under the lock
	// from the search to the signals: a Kill whose signal ends the command
	// lets the reaper in, whose call must then see what this one found
	// (it waited for none of them, and Wait returned while they ran on).
	p.mu.Lock()
	defer p.mu.Unlock()
	pid := p.cmd.Process.Pid
	found := limits.Descendants(pid)
	for _, d := range found {
		_ = syscall.Kill(d, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the session leader's group
	p.signalled = append(p.signalled, found...)
	return slices.Clone(p.signalled)
}

// waitGone waits, a few seconds at most, until none of pids is alive (a
// killed process runs on for a moment while the kernel tears it down).
func waitGone(pids []int) {
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// Pids lists the run's host pids: its cgroup members, or the command and
// its descendants.
func (p *process) Pids() []int {
	select {
	case <-p.done:
		return nil
	default:
	}
	if cg := p.plan.Cgroups; cg != nil {
		return cg.Procs()
	}
	return limits.Descendants(p.cmd.Process.Pid)
}

func (p *process) reap() {
	waitErr := p.cmd.Wait()
	var errs []error
	oom := false
	cg := p.plan.Cgroups
	if cg != nil {
		// Nothing of the run outlives the command, background children
		// included: the engine runs background work as its own runs.
		errs = append(errs, cg.KillAll())
		oom = cg.OOMKilled()
	} else {
		waitGone(p.signalAll())
	}
	p.prep.close()
	p.status, p.err = exitStatus(p.cmd, waitErr, oom, p.killed.Load())
	if p.err == nil {
		p.err = errors.Join(errs...)
	}
	close(p.done)
	if cg != nil {
		if err := cg.Remove(); err != nil {
			p.log.Warn("A run's cgroups could not be removed.", "err", err)
		}
	}
}

// exitStatus maps the command's end to an ExitStatus.
func exitStatus(cmd *exec.Cmd, waitErr error, oom, killed bool) (backends.ExitStatus, error) {
	ps := cmd.ProcessState
	if ps == nil {
		return backends.ExitStatus{Code: -1}, waitErr
	}
	st := backends.StatusOf(ps, oom, killed)
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return st, waitErr
	}
	return st, nil
}
