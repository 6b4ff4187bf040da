package bwrap

import (
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// TestArgsGuarded: with the Unix socket guard, the forwarder is bound
// once and runs first, with the guard's descriptor, with and without
// network (testdata/guarded_*.golden).
func TestArgsGuarded(t *testing.T) {
	t.Parallel()
	guard := &backends.UnixGuard{Forwarder: "/usr/lib/senclaw/senclaw-netfwd", Sockets: []string{"/run/mysqld/mysqld.sock"}}
	open := baseSpec(backends.FsOpen)
	open.UnixGuard = guard
	netOn := baseSpec(backends.FsStrict)
	netOn.Network = true
	netOn.Net = &backends.NetPlumbing{Dir: "/home/ann/.local/share/sc/net/s1", Forwarder: guard.Forwarder, Listen: []int{8080}}
	netOn.UnixGuard = guard
	for _, tc := range []struct {
		name string
		spec *backends.Spec
	}{{"guarded_open", open}, {"guarded_network_on", netOn}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := Args(tc.spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5, UnixGuard: 6})
			golden(t, tc.name, a)
			cmd := a[slices.Index(a, "--")+1:]
			if len(cmd) < 3 || cmd[0] != netfwd.BinaryPath || cmd[1] != "--unix-guard" || cmd[2] != "6" {
				t.Errorf("the command does not start with the guarded forwarder: %q", cmd)
			}
			if !slices.Equal(cmd[len(cmd)-len(tc.spec.Argv):], tc.spec.Argv) {
				t.Errorf("the command %q does not end with the sandbox's %q", cmd, tc.spec.Argv)
			}
			if n := strings.Count(strings.Join(a, "\n"), "\n"+netfwd.BinaryPath+"\n"); n != 2 { // bound once, run once
				t.Errorf("the forwarder appears %d times", n)
			}
			// Without the descriptor there is no guard to hand over.
			if b := Args(tc.spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5}); slices.Contains(b, "--unix-guard") {
				t.Errorf("--unix-guard without a descriptor")
			}
		})
	}
}
