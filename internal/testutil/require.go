package testutil

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// Need skips t with why on a laptop and fails it under CI (CI=true),
// so that CI cannot go green by skipping a test it was meant to run.
func Need(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, and this test cannot run: %s", why)
	}
	t.Skip(why)
}

// RequireRoot skips (fails under CI) unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Need(t, "needs root")
	}
}

// RequireBwrap skips (fails under CI) unless bubblewrap is installed.
func RequireBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		Need(t, "needs bubblewrap (apt-get install bubblewrap)")
	}
}

// WaitFor polls cond every 10 ms until it holds, and fails t naming what
// it waited for once d has passed.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
