package app

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"

	"github.com/senclaw/sandbox/backends"
)

// LaunchOptions say how Launch starts a supervised server.
type LaunchOptions struct {
	// Output receives the server's stdout and stderr (a log the caller
	// keeps out of the sandbox's reach) instead of a log file in the
	// workspace. It is required.
	Output io.Writer
	// Unconfined runs the server on this machine with no barrier: the
	// documented "off" path of a Space App whose sandbox is disabled. Its
	// record says "none"; its environment is still built from nothing,
	// and a root engine still runs it as the sandbox user.
	Unconfined bool
}

// Launched is a server started by Launch: a background run of the single
// runner that a supervisor watches and stops. Its record is kept like any
// other run's.
type Launched struct {
	output io.Writer
	done   chan struct{}

	mu    sync.Mutex
	lr    *liveRun
	start RunRecord
	end   RunRecord
}

// Launch starts req in sandbox id as a supervised background server: it
// passes the same gate as every run (policy, backend choice, network
// rules, limits, records), but has no timeout and writes its output to
// opts.Output. It returns once the process has started; Done closes when
// it has ended.
func (e *Engine) Launch(ctx context.Context, id string, req RunRequest, opts LaunchOptions) (*Launched, error) {
	if opts.Output == nil {
		return nil, errors.New("launch: no output writer given")
	}
	// The owner's hand edit of its policy file holds from this run on.
	if _, err := e.ownerPolicyFresh(); err != nil {
		return nil, asRefusal(err)
	}
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	req.Background = true
	p, err := e.planFor(sb, req)
	if err != nil {
		return nil, err
	}
	l := &Launched{output: opts.Output, done: make(chan struct{})}
	p.launch, p.offPath, p.keepSandboxUser = l, opts.Unconfined, opts.Unconfined
	if _, err := e.run(ctx, p); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Launched) started(lr *liveRun, rec RunRecord) {
	l.mu.Lock()
	l.lr, l.start = lr, rec
	l.mu.Unlock()
}

func (l *Launched) ended(rec RunRecord) {
	l.mu.Lock()
	l.end = rec
	l.mu.Unlock()
	close(l.done)
}

// Record is the run's record as it started: the isolation it really got,
// its backend and what was enforced.
func (l *Launched) Record() RunRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start
}

// Done is closed once the server and every process of its tree are gone.
func (l *Launched) Done() <-chan struct{} { return l.done }

// Result is the run's final record (exit code, how it ended); valid after
// Done.
func (l *Launched) Result() RunRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// Pid is the host pid of the process the backend started (bwrap itself
// for a bwrap sandbox).
func (l *Launched) Pid() int { return l.lr.proc.Pid() }

// Pids lists the host pids of the server's tree now (best effort).
func (l *Launched) Pids() []int { return l.lr.proc.Pids() }

// Terminate asks every process of the tree to end (SIGTERM), where the
// backend can; otherwise it kills the tree. The caller kills it with Kill
// when it has not ended after its grace time.
func (l *Launched) Terminate(reason string) error {
	if t, ok := l.lr.proc.(backends.Terminator); ok {
		l.lr.mu.Lock()
		if l.lr.reason == "" {
			l.lr.reason = reason
		}
		l.lr.mu.Unlock()
		err := t.Terminate()
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	l.lr.kill(reason)
	return nil
}

// Kill kills the whole tree at once.
func (l *Launched) Kill(reason string) { l.lr.kill(reason) }
