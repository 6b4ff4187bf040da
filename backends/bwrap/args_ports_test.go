package bwrap

import (
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// TestArgsPrivilegedLoopback: a loopback rule below 1024 gives the
// forwarder the handoff's descriptor and the sandbox no capability
// (testdata/privileged_loopback.golden).
func TestArgsPrivilegedLoopback(t *testing.T) {
	t.Parallel()
	spec := baseSpec(backends.FsStrict)
	spec.Ports = backends.PortRules{Loopback: []int{22, 443, 5432}}
	spec.Net = &backends.NetPlumbing{Dir: "/home/ann/.local/share/sc/net/s1", Forwarder: "/usr/lib/senclaw/senclaw-netfwd", Loopback: []int{22, 443, 5432}}
	spec.UnixGuard = &backends.UnixGuard{Forwarder: spec.Net.Forwarder}
	a := Args(spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5, UnixGuard: 6, Ports: 7})
	golden(t, "privileged_loopback", a)
	cmd := a[slices.Index(a, "--")+1:]
	if i := slices.Index(cmd, "--ports-fd"); i < 0 || cmd[i+1] != "7" {
		t.Errorf("the forwarder is not given the ports' descriptor: %q", cmd)
	}
	if joined := strings.Join(a, " "); strings.Contains(joined, "--cap-add") || strings.Contains(joined, "ip_unprivileged_port_start") {
		t.Errorf("the sandbox gets a privilege: %q", a)
	}
	// Without the descriptor (no port below 1024) there is nothing to hand over.
	if b := Args(spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5, UnixGuard: 6}); slices.Contains(b, "--ports-fd") {
		t.Errorf("--ports-fd without a descriptor")
	}
}
