package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestEscapeSyscalls checks that the seccomp filter and the namespaces hold
// inside a real sandbox.
func TestEscapeSyscalls(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	want := escapetest.SyscallsWant()
	want["signal_pid1"] = "0" // its own init, in its own pid namespace
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			r := py(t, b, newSpec(t, u, d.ws), escapetest.Syscalls)
			if r.status.Code != 0 {
				t.Fatalf("exit %+v: %s", r.status, r.stderr)
			}
			escapetest.CheckSyscalls(t, r.stdout, want)
		})
	}
}

// TestEscapeWrites tries to write outside the workspace in every way we
// know, in every fs mode, then looks at the host.
func TestEscapeWrites(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		for _, mode := range backends.FsModes {
			t.Run(u.Name+"_"+string(mode), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				must(t, os.Symlink(d.outside, filepath.Join(d.ws, "hostlink")))
				rel, err := filepath.Rel(d.ws, d.outside)
				must(t, err)
				etc := fmt.Sprintf("/etc/senclaw-escape-%s-%s", u.Name, mode)
				spec := newSpec(t, u, d.ws)
				spec.FsMode = mode
				spec.Mounts = []backends.Mount{{Source: d.outside, Target: "ro", ReadOnly: true}}
				r := py(t, b, spec, escapetest.Writes(d.ws, d.outside, etc, rel))
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				escapetest.CheckWrites(t, r.stdout, d.ws, d.outside, etc)
			})
		}
	}
}
