//go:build !darwin

package seatbelt

import (
	"context"
	"errors"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Probe reports that Seatbelt exists only on macOS.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	return b.state(backends.Capability{
		Backend: Name, Isolates: true, Enforces: []string{}, CheckedAt: time.Now(),
		Reason: "Seatbelt (sandbox-exec) is macOS's sandbox; this is not macOS",
	}, false)
}

// Start always fails: Seatbelt exists only on macOS.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	return nil, errors.New("starting seatbelt: Seatbelt (sandbox-exec) is macOS's sandbox; this is not macOS")
}
