package bwrap

import (
	"context"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestSandboxLimitsHoldAcrossRuns: the limits a sandbox shows hold for
// the sandbox as a whole, across its concurrent runs, not for each run
// (N runs got N times them).
func TestSandboxLimitsHoldAcrossRuns(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	testutil.RequireCgroups(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	escapetest.HoldAcrossRuns(t, func(ctx context.Context, argv []string, edit func(*backends.Spec)) (backends.Process, error) {
		spec := newSpec(t, u, newTestDirs(t, u).ws, argv...)
		edit(spec)
		return b.Start(ctx, spec)
	})
}
