//go:build !linux

package bwrap

import (
	"context"
	"errors"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// Probe reports that bwrap exists only on Linux.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	return backends.Capability{
		Backend: Name, State: backends.NeverSeen, Isolates: true,
		Reason: "bubblewrap is a Linux sandbox", CheckedAt: time.Now(),
	}
}

// Start always fails: bwrap exists only on Linux.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	return nil, errors.New("starting bwrap: bubblewrap is a Linux sandbox")
}

// hostFacts has nothing to hold where bwrap does not run.
type hostFacts struct{}

func newHostFacts(*limits.Host) hostFacts { return hostFacts{} }

// Sweep has nothing to sweep where bwrap does not run.
func (b *Backend) Sweep() int { return 0 }
