package bwrap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
)

// TestASetupFailureSaysWhy: when bwrap cannot build the sandbox (a mount
// whose target is a file in the workspace), the start fails with bwrap's
// own words and nothing runs, with the Unix socket guard (whose handoff
// then never comes) and without it.
func TestASetupFailureSaysWhy(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	fwd := netfwdtest.Path(t)
	u := sandboxUsers(t)[0]
	for _, guarded := range []bool{true, false} {
		name := "unguarded"
		if guarded {
			name = "guarded"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			must(t, os.WriteFile(filepath.Join(d.ws, "data"), []byte("a file"), 0o644))
			spec := newSpec(t, u, d.ws, "sh", "-c", "touch ran")
			spec.Mounts = []backends.Mount{{Source: d.outside, Target: "data/inner", ReadOnly: true}}
			if guarded {
				spec.UnixGuard = &backends.UnixGuard{Forwarder: fwd}
			}
			_, err := New(Options{}).Start(context.Background(), spec)
			var se *SetupError
			if !errors.As(err, &se) || !strings.HasPrefix(se.Message, "bwrap: ") {
				t.Fatalf("Start: %v, want bwrap's setup error", err)
			}
			if _, err := os.Stat(filepath.Join(d.ws, "ran")); err == nil {
				t.Fatal("the command ran")
			}
		})
	}
}
