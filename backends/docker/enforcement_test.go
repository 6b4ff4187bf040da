package docker

import (
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// TestEnforcement_saysWhatDoesNotHold: the record names rules a container
// does not enforce.
func TestEnforcement_saysWhatDoesNotHold(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		edit        func(*backends.Spec)
		missing     string
		limitsToo   string
		noneMissing bool
	}{
		{name: "strict_network_off", edit: func(*backends.Spec) {}, noneMissing: true, limitsToo: "network: none"},
		{name: "open_mode", edit: func(s *backends.Spec) { s.FsMode = backends.FsOpen }, missing: "fs mode open does not apply"},
		{name: "allowlist_paths", edit: func(s *backends.Spec) { s.FsMode = backends.FsAllowlist; s.ReadPaths = []string{"/srv"} }, missing: "read paths are not exposed"},
		{name: "connect_rules_without_plumbing", edit: func(s *backends.Spec) { s.Ports.Connect = []int{443} }, noneMissing: true, limitsToo: "network: none"},
		{name: "network_on", edit: func(s *backends.Spec) {
			s.Network = true
			s.Net = &backends.NetPlumbing{Dir: "/var/lib/senclaw/net/s1", Forwarder: "/usr/lib/senclaw/senclaw-netfwd"}
		}, noneMissing: true, limitsToo: "egress only through the engine's proxy (HTTP 127.0.0.1:3128, SOCKS5 127.0.0.1:1080 inside), which applies the port, domain and address rules; UDP and other non-TCP traffic is not forwarded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := goldenSpec()
			tc.edit(spec)
			e := enforcementOf(spec, mustShape(t, spec))
			missing := strings.Join(e.Missing, "; ")
			if e.Isolation != "docker" || (tc.noneMissing && missing != "") || !strings.Contains(missing, tc.missing) {
				t.Fatalf("enforcement %+v", e)
			}
			limits := strings.Join(e.Limits, "; ")
			for _, want := range []string{"memory: container cgroup, 512 MB", "pids: container cgroup, 256", "cpu: container cgroup, 1.5 CPUs", "disk: fsize rlimit 100 MB", "seccomp", "processes: the run's, and what left its session", tc.limitsToo} {
				if !strings.Contains(limits, want) {
					t.Errorf("limits %q lack %q", limits, want)
				}
			}
		})
	}
}
