package app

import (
	"fmt"
	"runtime"
	"sync"
)

// The engine bounds what agents can make it hold: sandboxes, and runs in
// flight in all and per sandbox (background runs included). The bounds
// are settings (maxSandboxes, maxRuns, maxRunsPerSandbox); a request past
// one is refused with the bound named and how to raise it, and a refused
// run is recorded like any refusal.

// Ranges of the bounds' settings.
const (
	MaxSandboxesLimit      = 100000
	MaxRunsLimit           = 100000
	MaxRunsPerSandboxLimit = 10000
)

// defaultMaxRuns is 4 runs per core, times 8 for runs that mostly wait.
func defaultMaxRuns() int { return 4 * runtime.NumCPU() * 8 }

// LimitError is a request past one of the engine's bounds. Nothing was
// done.
type LimitError struct {
	// Setting is the bound's settings key.
	Setting string
	Reason  string
}

func (e *LimitError) Error() string { return e.Reason }

// checkBounds validates the bounds of s.
func checkBounds(s Settings) error {
	for _, err := range []error{
		checkRange("maxSandboxes", s.MaxSandboxes, 1, MaxSandboxesLimit, ""),
		checkRange("maxRuns", s.MaxRuns, 1, MaxRunsLimit, ""),
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
	return fmt.Sprintf("raise %s in the settings (PUT /api/sandbox/settings, or the dashboard's Defaults card)", setting)
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

// runSlots counts the runs in flight, from the gate to their end.
type runSlots struct {
	mu  sync.Mutex
	all int
	per map[string]int
}

// takeRunSlot counts a run of sandboxID in, or refuses it past maxRuns
// or maxRunsPerSandbox. release counts it out; call it once.
func (e *Engine) takeRunSlot(sandboxID string) (release func(), err error) {
	s := e.Settings()
	l := &e.slots
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.per == nil {
		l.per = map[string]int{}
	}
	switch {
	case l.all >= s.MaxRuns:
		return nil, refused("%d runs are in flight, the most the engine allows at once (maxRuns %d); wait for some to end, stop background runs you no longer need, or %s", l.all, s.MaxRuns, raise("maxRuns"))
	case l.per[sandboxID] >= s.MaxRunsPerSandbox:
		return nil, refused("sandbox %s has %d runs in flight, the most one sandbox may have at once (maxRunsPerSandbox %d), background runs included; wait for some to end, stop the ones you no longer need, or %s", sandboxID, l.per[sandboxID], s.MaxRunsPerSandbox, raise("maxRunsPerSandbox"))
	}
	l.all++
	l.per[sandboxID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.all--
			if l.per[sandboxID]--; l.per[sandboxID] <= 0 {
				delete(l.per, sandboxID)
			}
		})
	}, nil
}
