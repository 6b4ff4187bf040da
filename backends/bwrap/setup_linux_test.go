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
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestASetupFailureSaysWhy: when bwrap cannot build the sandbox (a mount
// whose target is a file in the workspace), the start fails with bwrap's
// own words and nothing runs, with the Unix socket guard (whose handoff
// then never comes) and without it.
func TestASetupFailureSaysWhy(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
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

// TestAForwarderThatDiesAtStartSaysWhy: a forwarder that cannot even
// start (a Go runtime's fatal error, as under an address space limit)
// dies before it hands the Unix socket guard over: the refusal carries
// what it wrote to stderr, not only the handoff's EOF.
func TestAForwarderThatDiesAtStartSaysWhy(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	u := sandboxUsers(t)[0]
	d := newTestDirs(t, u)
	dead := filepath.Join(d.base, "senclaw-netfwd")
	must(t, os.WriteFile(dead, []byte("#!/bin/sh\necho 'fatal error: failed to reserve page summary memory' >&2\nexit 2\n"), 0o755))
	must(t, os.Chmod(d.base, 0o755))
	spec := newSpec(t, u, d.ws, "sh", "-c", "touch ran")
	netDir := filepath.Join(d.base, "net")
	must(t, os.Mkdir(netDir, 0o777))
	must(t, os.Chmod(netDir, 0o777))
	spec.Net = &backends.NetPlumbing{Dir: netDir, Forwarder: dead}
	spec.UnixGuard = &backends.UnixGuard{Forwarder: dead}
	_, err := New(Options{}).Start(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "fatal error: failed to reserve page summary memory") {
		t.Fatalf("Start: %v, want the forwarder's own words", err)
	}
	if _, err := os.Stat(filepath.Join(d.ws, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}
