// Package direct runs a process on the host with no barrier at all. The
// engine uses it only for the documented "off" paths (agent shell and
// scheduler scripts switched off) and for a run that explicitly asks for no
// isolation; the records of such runs say so.
package direct

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Backend is the no-isolation backend.
type Backend struct {
	opts Options
}

// Options configure a Backend.
type Options struct {
	// Launcher is the envexec launcher (the engine's own executable; main
	// handles envexec.Arg): a traced run's command gets its environment
	// from it, while strace runs with a fixed one. Without it a traced run
	// runs untraced and its record says so.
	Launcher string
}

var (
	_ backends.Backend    = (*Backend)(nil)
	_ backends.Terminator = (*process)(nil)
)

// New returns the direct backend, configured by opts when given (at most
// one).
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
// group so that the whole tree can be killed.
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
		Stdout:      spec.Stdout,
		Stderr:      spec.Stderr,
		SysProcAttr: sysProcAttr(spec.User),
	}
	if spec.Terminal != nil {
		useTerminal(cmd, spec.Terminal, spec.TerminalFDs)
	}
	// trace (issue #7): with spec.Trace, strace runs the command (trace*.go).
	tr, err := b.traceCommand(cmd, spec)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		tr.Release()
		return nil, fmt.Errorf("starting %s: %w", spec.Argv[0], err)
	}
	return traced(tr, &process{cmd: cmd}), nil // trace (issue #7)
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
	waitOnce sync.Once
	status   backends.ExitStatus
	err      error
}

func (p *process) Pid() int { return p.cmd.Process.Pid }

func (p *process) Wait() (backends.ExitStatus, error) {
	p.waitOnce.Do(func() {
		err := p.cmd.Wait()
		// The leader is gone; take its group with it so nothing it
		// started lives on unaccounted.
		_ = killGroup(p.cmd.Process.Pid)
		p.status, p.err = exitStatus(p.cmd, err)
	})
	return p.status, p.err
}

func (p *process) Kill() error { return killGroup(p.cmd.Process.Pid) }

// Signal sends sig to the command itself.
func (p *process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Terminate sends SIGTERM to the process group.
func (p *process) Terminate() error { return termGroup(p.cmd.Process.Pid) }

func (p *process) Enforcement() backends.Enforcement {
	return backends.Enforcement{
		Isolation: "none",
		Missing:   []string{"no isolation: files, network and limits are not enforced"},
	}
}

func (p *process) Pids() []int {
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
