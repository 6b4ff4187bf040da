package backends

import (
	"log/slog"
	"sync"
)

// ProbeHistory turns each probe's outcome into a ProbeState: healthy when
// it worked now, seen and gone when it worked earlier in this engine's
// life, never seen otherwise. Changes are logged, not every probe. The
// zero value is ready to use.
type ProbeHistory struct {
	mu          sync.Mutex
	everHealthy bool
	last        ProbeState
}

// Record sets c.State from healthy and what came before, logs a change
// on log, and returns c.
func (h *ProbeHistory) Record(c Capability, healthy bool, log *slog.Logger) Capability {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case healthy:
		c.State = Healthy
		h.everHealthy = true
	case h.everHealthy:
		c.State = SeenGone
	default:
		c.State = NeverSeen
	}
	if c.State != h.last && log != nil {
		log.Info("backend state changed", "backend", c.Backend, "from", string(h.last), "to", string(c.State), "reason", c.Reason)
	}
	h.last = c.State
	return c
}
