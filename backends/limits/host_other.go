//go:build !linux

package limits

import (
	"log/slog"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Host is how this engine limits its runs; cgroups are Linux's alone.
type Host struct{}

// HostOptions configure a Host (see the Linux one).
type HostOptions struct {
	Scope  string
	Getenv func(string) string
	Logger *slog.Logger
}

// FacilityName names the Host's row among the capabilities.
const FacilityName = "cgroups"

// NewHost returns a Host.
func NewHost(HostOptions) *Host { return &Host{} }

// Probe says that there are no cgroups here.
func (h *Host) Probe() backends.Capability {
	return backends.Capability{Backend: FacilityName, State: backends.NeverSeen, CheckedAt: time.Now(),
		Reason: "cgroups are Linux's; this system's backends limit runs their own way"}
}
