package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
)

var _ backends.Terminator = (*process)(nil)

// process is one run: an exec in a container.
type process struct {
	b      *Backend
	cli    *apiClient
	ref    *ctrRef
	execID string
	runID  string

	conn    net.Conn
	tty     *os.File      // with a terminal: the engine's, relayed to the container's
	copied  chan struct{} // closed when the output stream ended
	copyErr error
	done    func()
	// forget drops the sandbox's cached container after a restart.
	forget func()

	enforcementMu sync.Mutex
	enforcement   backends.Enforcement

	pidMu   sync.Mutex
	hostPid int // the exec's pid as the daemon reports it, 0 until known

	killed   atomic.Bool
	finished atomic.Bool // Wait is done: later kills are no-ops
	killMu   sync.Mutex
	inPid    int // the run's in-container pid, once a kill inside read it
	waitOnce sync.Once
	status   backends.ExitStatus
	err      error
}

// Pid is the exec's pid as the daemon reports it: a pid of this machine
// when the daemon runs here, else of the daemon's VM.
func (p *process) Pid() int {
	pid, _ := p.leader(context.Background())
	return pid
}

// Enforcement says what the run got. It can grow after the start: when a
// kill had to restart the container, a note says so (the engine should
// read it again after Wait).
func (p *process) Enforcement() backends.Enforcement {
	p.enforcementMu.Lock()
	defer p.enforcementMu.Unlock()
	e := p.enforcement
	e.Limits = slices.Clone(e.Limits)
	e.Missing = slices.Clone(e.Missing)
	return e
}

// Pids lists the run's processes on this machine (empty for a daemon
// whose pids are not ours).
func (p *process) Pids() []int {
	pid, err := p.leader(context.Background())
	if err != nil || !p.ref.HostPids {
		return nil
	}
	return treePids(pid, p.ref.InitPid, p.ref.ID)
}

// leader finds the exec's pid; the daemon sets it a moment after the
// attach returns.
func (p *process) leader(ctx context.Context) (int, error) {
	p.pidMu.Lock()
	defer p.pidMu.Unlock()
	if p.hostPid != 0 {
		return p.hostPid, nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ictx, cancel := callCtx(ctx, callTimeout)
		e, err := p.cli.ExecInspect(ictx, p.execID, client.ExecInspectOptions{})
		cancel()
		if err != nil {
			return 0, p.b.daemonErr("inspecting the run", err)
		}
		if e.PID != 0 {
			p.hostPid = e.PID
			return e.PID, nil
		}
		if time.Now().After(deadline) {
			return 0, errors.New("the daemon did not report the run's pid within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Wait waits for the exec to end, then kills what it left behind in the
// container, so that no process of the run outlives Wait.
func (p *process) Wait() (backends.ExitStatus, error) {
	p.waitOnce.Do(func() {
		defer p.done()
		defer p.finished.Store(true)
		// The daemon closes the stream when the exec ends (at most about
		// 2s later if children still hold its output open).
		<-p.copied
		e, err := p.waitExit(context.Background(), p.execID)
		_ = p.conn.Close()
		if p.tty != nil {
			_ = p.tty.Close()
		}
		if err != nil {
			p.status, p.err = backends.ExitStatus{Code: -1}, err
			return
		}
		p.pidMu.Lock()
		p.hostPid = e.PID
		p.pidMu.Unlock()
		if p.ref.Remote && !p.killed.Load() && e.ExitCode != 128+9 {
			// The forwarder in front of the run (--reap) ended its whole
			// tree before it ended itself: there is nothing to sweep.
		} else if cerr := p.killTree(e.PID, true); cerr != nil {
			p.b.log.Warn("Processes a docker run left behind could not be killed.", "run", p.runID, "err", cerr)
		}
		p.status = backends.ExitStatus{Code: e.ExitCode}
		if p.killed.Load() && e.ExitCode == 128+9 {
			p.status.Signal = "killed"
		}
	})
	return p.status, p.err
}

// waitExit polls an exec until it is no longer running: a process may
// close its output and keep running, and the daemon may end the stream a
// moment before it records the exit code. It gives up when ctx ends.
func (p *process) waitExit(ctx context.Context, execID string) (client.ExecInspectResult, error) {
	return p.b.waitExec(ctx, p.cli, execID)
}

// waitExec is waitExit for any exec of the backend's.
func (b *Backend) waitExec(ctx context.Context, cli *apiClient, execID string) (client.ExecInspectResult, error) {
	for delay := time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		ictx, cancel := callCtx(ctx, callTimeout)
		e, err := cli.ExecInspect(ictx, execID, client.ExecInspectOptions{})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return e, execBlocked(ctx)
			}
			return e, b.daemonErr("reading an exec's exit code", err)
		}
		if !e.Running {
			return e, nil
		}
		select {
		case <-ctx.Done():
			return e, execBlocked(ctx)
		case <-time.After(delay):
		}
	}
}

// execBlocked says why waitExit gave up.
func execBlocked(ctx context.Context) error {
	return fmt.Errorf("the engine stopped waiting for an exec in the container to end (a script is blocked there, perhaps on a file the sandboxed code planted): %w", ctx.Err())
}

var _ backends.Resizer = (*process)(nil)

// Resize passes a resize of the engine's terminal on to the container's.
func (p *process) Resize(cols, rows uint16) error {
	if p.tty == nil {
		return nil
	}
	ctx, cancel := callCtx(context.Background(), callTimeout)
	defer cancel()
	_, err := p.cli.ExecResize(ctx, p.execID, client.ExecResizeOptions{Height: uint(rows), Width: uint(cols)})
	return err
}
