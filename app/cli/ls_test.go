package cli

import (
	"testing"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/backends"
)

// `senclaw ls` says what the network is as the dashboard does: a sandbox
// with the network off and a listen port is off, listening.
func TestNetworkCell(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sb   apitype.Sandbox
		want string
	}{
		{apitype.Sandbox{}, "off"},
		{apitype.Sandbox{Ports: backends.PortRules{Listen: []int{8000}}}, "off · listen 8000"},
		{apitype.Sandbox{Network: true, Ports: backends.PortRules{Connect: []int{443, 80}, Loopback: []int{5432}}}, "on · connect 443,80 · loopback 5432"},
	} {
		if got := networkCell(tc.sb); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.sb.Ports, got, tc.want)
		}
	}
}
