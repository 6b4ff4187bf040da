package backends

import (
	"log/slog"
	"os"
	"sync"
)

// ProbeHistory turns what each probe of a backend found into its
// ProbeState: Healthy, SeenGone when it worked earlier in this engine's
// life, else NeverSeen; and logs each change of state once. The zero
// value is ready to use.
type ProbeHistory struct {
	mu          sync.Mutex
	everHealthy bool
	last        ProbeState
}

// Settle sets c.State from healthy and what came before, and logs the
// change (with c's reason and version) when the state is a new one.
func (h *ProbeHistory) Settle(c *Capability, healthy bool, log *slog.Logger) {
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
		log.Info(c.Backend+" backend state changed", "from", string(h.last), "to", string(c.State),
			"reason", c.Reason, "version", c.Version)
	}
	h.last = c.State
}

// DefaultSandboxUser is u, or when u is nil who sandboxes run as by
// default: uid/gid 65534 for a root engine, the engine's own user
// otherwise. The probes' trial runs use it.
func DefaultSandboxUser(u *Credential) *Credential {
	if u != nil {
		return u
	}
	if os.Geteuid() == 0 {
		return &Credential{UID: 65534, GID: 65534}
	}
	return &Credential{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
}

// Record is Settle for a Capability passed by value: it returns c with
// its state set.
func (h *ProbeHistory) Record(c Capability, healthy bool, log *slog.Logger) Capability {
	h.Settle(&c, healthy, log)
	return c
}
