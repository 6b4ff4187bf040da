//go:build !linux

package landlock

import (
	"context"
	"errors"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// Probe reports that Landlock exists only on Linux.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	return backends.Capability{
		Backend: Name, State: backends.NeverSeen, Isolates: true,
		Reason: "landlock is a Linux feature", CheckedAt: time.Now(),
	}
}

// Start always fails: Landlock exists only on Linux.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	return nil, errors.New("starting landlock: landlock is a Linux feature")
}

// hostFacts has nothing to hold where Landlock does not run.
type hostFacts struct{}

func newHostFacts(*limits.Host) hostFacts { return hostFacts{} }

// RunHelper is the helper's entry point; there is no helper off Linux.
func RunHelper() int { return 2 }

// Sweep has nothing to sweep where Landlock does not run.
func (b *Backend) Sweep() int { return 0 }
