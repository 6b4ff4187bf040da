package testutil

import (
	"testing"

	"github.com/senclaw/sandbox/backends/limits"
)

// RequireCgroups skips (fails under CI) unless this user may make
// cgroups (cgroup v2 delegated to it, or root): the limits that hold
// only there.
func RequireCgroups(t testing.TB) {
	t.Helper()
	if !limits.Detect().Writable() {
		Need(t, "needs writable cgroups (cgroup v2, as root or delegated to this user)")
	}
}
