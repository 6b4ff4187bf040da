//go:build !windows

package windows

import (
	"context"
	"errors"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Probe reports that the restricted-token backend exists only on Windows.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	return b.state(backends.Capability{
		Backend: Name, Isolates: true, Enforces: []string{}, CheckedAt: time.Now(),
		Reason: "the restricted-token backend is Windows's; this is not Windows",
	}, false)
}

// Start always fails: the backend exists only on Windows.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	return nil, errors.New("starting windows: the restricted-token backend is Windows's; this is not Windows")
}
