package landlock

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// process is a running Landlock sandbox: the command the helper became
// (or strace, when traced). A goroutine reaps it, makes sure the whole
// tree is gone, closes the proxy door and removes the cgroups; Wait only
// waits for it.
type process struct {
	cmd    *exec.Cmd
	plan   *limits.Plan
	prep   *prepared
	enf    backends.Enforcement
	killed atomic.Bool
	log    *slog.Logger

	done   chan struct{}
	status backends.ExitStatus
	err    error
}

var _ backends.Process = (*process)(nil)

func newProcess(cmd *exec.Cmd, plan *limits.Plan, prep *prepared, log *slog.Logger) *process {
	if plan == nil {
		plan = &limits.Plan{}
	}
	p := &process{cmd: cmd, plan: plan, prep: prep, done: make(chan struct{}), log: log}
	p.enf = backends.Enforcement{Isolation: Name,
		Limits:  append(enforced(prep), plan.Applied...),
		Missing: append(plan.Missing, prep.missing...)}
	if plan.Cgroups == nil {
		p.enf.Missing = append(p.enf.Missing, untracked)
	}
	go p.reap()
	return p
}

// Pid returns the host pid of the command (of strace, when traced).
func (p *process) Pid() int { return p.cmd.Process.Pid }

// Enforcement says what the process really got.
func (p *process) Enforcement() backends.Enforcement { return p.enf }

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

func (p *process) signalAll() {
	if cg := p.plan.Cgroups; cg != nil {
		cg.Signal()
		return
	}
	pid := p.cmd.Process.Pid
	for _, d := range limits.Descendants(pid) {
		_ = syscall.Kill(d, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the session leader's group
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
		p.signalAll()
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
	case killed && st.Code != 0:
		st.Signal = "killed"
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return st, waitErr
	}
	return st, nil
}
