package app

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// The engine bounds what agents can make it hold, with one model for all
// of a run's bounds:
//   - concurrency: foreground runs executing at once (one-shot, exec,
//     code, install, scheduled, agent shell); more wait in the queue,
//     first come first served;
//   - queueLength: runs waiting for a place; past it a run is refused;
//   - maxBackgroundRuns: background runs and Space App servers going at
//     once. They never wait: a server started minutes late behind a
//     thousand one-shots is no use to anyone, and one that held a place
//     of the concurrency for its whole life would starve the one-shots;
//     past the bound they are refused;
//   - maxRunsPerSandbox: runs of one sandbox in flight, waiting ones and
//     background ones included;
//   - maxSandboxes: sandboxes held.
//
// A refusal names the bound and how to raise it; the API answers it with
// 429, and a refused run is recorded like any refusal.

// Ranges of the bounds' settings.
const (
	MaxSandboxesLimit      = 100000
	MaxConcurrencyLimit    = 10000
	MaxQueueLengthLimit    = 100000
	MaxBackgroundRunsLimit = 100000
	MaxRunsPerSandboxLimit = 10000
)

// defaultConcurrency is 4 runs per core: a run mostly waits on a sandbox's
// start and its own I/O.
func defaultConcurrency() int { return 4 * runtime.NumCPU() }

// defaultMaxBackgroundRuns is what maxRuns was before the run queue: 32
// per core.
func defaultMaxBackgroundRuns() int { return 32 * runtime.NumCPU() }

// DefaultQueueLength is how many runs may wait for a place by default.
const DefaultQueueLength = 1000

// LimitError is a request past one of the engine's bounds. Nothing was
// done. A run past one is also a refusal (errors.As finds the
// *RefusedError), recorded as such.
type LimitError struct {
	// Setting is the bound's settings key.
	Setting string
	Reason  string
	refusal *RefusedError
}

func (e *LimitError) Error() string { return e.Reason }

// Unwrap makes a run's LimitError a refusal too.
func (e *LimitError) Unwrap() error {
	if e.refusal == nil {
		return nil
	}
	return e.refusal
}

// runLimit is a run refused past the bound setting.
func runLimit(setting, format string, args ...any) *LimitError {
	reason := fmt.Sprintf(format, args...)
	return &LimitError{Setting: setting, Reason: reason, refusal: &RefusedError{Reason: reason}}
}

// checkBounds validates the bounds of s.
func checkBounds(s Settings) error {
	for _, err := range []error{
		checkRange("maxSandboxes", s.MaxSandboxes, 1, MaxSandboxesLimit, ""),
		checkRange("concurrency", s.Concurrency, 1, MaxConcurrencyLimit, " runs at once"),
		checkRange("queueLength", s.QueueLength, 0, MaxQueueLengthLimit, " waiting runs (0: none wait)"),
		checkRange("maxBackgroundRuns", s.MaxBackgroundRuns, 1, MaxBackgroundRunsLimit, ""),
		checkRange("maxRunsPerSandbox", s.MaxRunsPerSandbox, 1, MaxRunsPerSandboxLimit, ""),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// raise says how to raise a bound.
func raise(setting string) string {
	return fmt.Sprintf("raise %s in the settings (senclaw settings set %s=N, PUT /api/sandbox/settings, or the dashboard's Defaults card)", setting, setting)
}

// roomForSandbox refuses a new sandbox when the engine holds MaxSandboxes.
// Call it with e.createMu held, and store the sandbox before unlocking.
func (e *Engine) roomForSandbox() error {
	n, err := e.store.CountSandboxes()
	if err != nil {
		return err
	}
	if max := e.Settings().MaxSandboxes; n >= max {
		return &LimitError{Setting: "maxSandboxes", Reason: fmt.Sprintf("refused: the engine holds %d sandboxes, the most it allows (maxSandboxes %d); delete sandboxes you no longer need, or %s", n, max, raise("maxSandboxes"))}
	}
	return nil
}

// runSlots counts the runs in flight, from the gate to their end, and
// keeps the queue of those waiting for a place.
type runSlots struct {
	mu         sync.Mutex
	running    int // foreground runs executing
	background int
	per        map[string]int // per sandbox: executing, waiting, background
	queue      []*waiter
}

// waiter is a run in the queue; ready is closed when it got a place.
type waiter struct {
	ready   chan struct{}
	granted bool
}

// Queue says how many runs execute, wait and go on in the background.
func (e *Engine) Queue() QueueStats {
	l := &e.slots
	l.mu.Lock()
	defer l.mu.Unlock()
	return QueueStats{Running: l.running, Waiting: len(l.queue), Background: l.background}
}

// admit gives a run of sandboxID a place: at once, after waiting in the
// queue (a foreground run while concurrency runs execute), or not (a
// *LimitError past a bound, a refusal when ctx ends while it waits).
// release gives the place back; call it once.
func (e *Engine) admit(ctx context.Context, sandboxID string, background bool) (release func(), err error) {
	s := e.Settings()
	l := &e.slots
	l.mu.Lock()
	if l.per == nil {
		l.per = map[string]int{}
	}
	if n := l.per[sandboxID]; n >= s.MaxRunsPerSandbox {
		l.mu.Unlock()
		return nil, runLimit("maxRunsPerSandbox", "sandbox %s has %d runs in flight or waiting, the most one sandbox may have (maxRunsPerSandbox %d), background runs included; wait for some to end, stop the ones you no longer need, or %s", sandboxID, n, s.MaxRunsPerSandbox, raise("maxRunsPerSandbox"))
	}
	if background {
		if l.background >= s.MaxBackgroundRuns {
			n := l.background
			l.mu.Unlock()
			return nil, runLimit("maxBackgroundRuns", "%d background runs and Space App servers are going, the most the engine allows at once (maxBackgroundRuns %d); stop the ones you no longer need (senclaw ps, senclaw kill), or %s", n, s.MaxBackgroundRuns, raise("maxBackgroundRuns"))
		}
		l.background++
		l.per[sandboxID]++
		l.mu.Unlock()
		return l.releaser(e, sandboxID, true), nil
	}
	if l.running < s.Concurrency && len(l.queue) == 0 {
		l.running++
		l.per[sandboxID]++
		l.mu.Unlock()
		return l.releaser(e, sandboxID, false), nil
	}
	if len(l.queue) >= s.QueueLength {
		n := len(l.queue)
		l.mu.Unlock()
		return nil, runLimit("queueLength", "the run queue is full: %d runs execute (concurrency %d) and %d wait (queueLength %d); try again once some have ended, or %s", l.running, s.Concurrency, n, s.QueueLength, raise("queueLength"))
	}
	w := &waiter{ready: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.per[sandboxID]++
	l.mu.Unlock()
	select {
	case <-w.ready:
		return l.releaser(e, sandboxID, false), nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	if w.granted {
		l.mu.Unlock()
		l.releaser(e, sandboxID, false)()
	} else {
		for i, q := range l.queue {
			if q == w {
				l.queue = append(l.queue[:i], l.queue[i+1:]...)
				break
			}
		}
		l.forget(sandboxID)
		l.mu.Unlock()
	}
	return nil, refused("the caller went away while the run waited in the queue for a place (%v); nothing was started", context.Cause(ctx))
}

// releaser gives a place back once, and the freed places to the queue.
func (l *runSlots) releaser(e *Engine, sandboxID string, background bool) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.forget(sandboxID)
			if background {
				l.background--
				return
			}
			l.running--
			l.grant(e.Settings().Concurrency)
		})
	}
}

// forget counts one run of sandboxID out. Call it with l.mu held.
func (l *runSlots) forget(sandboxID string) {
	if l.per[sandboxID]--; l.per[sandboxID] <= 0 {
		delete(l.per, sandboxID)
	}
}

// grant gives free places to the runs waiting longest. Call it with l.mu
// held.
func (l *runSlots) grant(concurrency int) {
	for l.running < concurrency && len(l.queue) > 0 {
		w := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.running++
		w.granted = true
		close(w.ready)
	}
}

// settingsChanged lets waiting runs in when concurrency was raised.
func (e *Engine) settingsChanged() {
	c := e.Settings().Concurrency
	e.slots.mu.Lock()
	e.slots.grant(c)
	e.slots.mu.Unlock()
}
