package netproxy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	own := []netip.Prefix{
		netip.MustParsePrefix("203.0.113.7/28"),  // a public address with its subnet
		netip.MustParsePrefix("198.51.100.5/32"), // a point-to-point link
		netip.MustParsePrefix("2001:db8:1::5/64"),
	}
	cases := []struct {
		name, addr string
		why        string // a word of the reason; "" is public
	}{
		{"public_v4", "93.184.215.14", ""},
		{"public_v6", "2606:2800:220:1:248:1893:25c8:1946", ""},
		{"own_address", "203.0.113.7", "this machine"},
		{"on_link_neighbour", "203.0.113.9", "own network (203.0.113.0/28)"},
		{"past_the_subnet", "203.0.113.20", ""},
		{"point_to_point_peer", "198.51.100.6", ""},
		{"own_v6", "2001:db8:1::5", "this machine"},
		{"on_link_v6", "2001:db8:1::99", "own network (2001:db8:1::/64)"},
		{"other_v6_subnet", "2001:db8:2::99", ""},
		{"loopback", "127.0.0.2", "loopback"},
		{"mapped_loopback", "::ffff:127.0.0.1", "loopback"},
		{"mapped_neighbour", "::ffff:203.0.113.9", "own network"},
		{"v4_compatible_loopback", "::7f00:1", "carrying 127.0.0.1, a loopback"},
		{"v4_compatible_private", "::a00:1", "carrying 10.0.0.1, a private"},
		{"v4_translated", "::ffff:0:7f00:1", "carrying 127.0.0.1"},
		{"six_to_four_loopback", "2002:7f00:1::", "carrying 127.0.0.1"},
		{"six_to_four_private", "2002:a00:1::1", "carrying 10.0.0.1"},
		{"six_to_four_metadata", "2002:a9fe:a9fe::", "carrying 169.254.169.254"},
		{"six_to_four_public", "2002:5db8:d70e::1", ""},
		{"nat64_loopback", "64:ff9b::7f00:1", "carrying 127.0.0.1"},
		{"nat64_neighbour", "64:ff9b::cb00:7109", "carrying 203.0.113.9"},
		{"nat64_public", "64:ff9b::5db8:d70e", ""},
		{"nat64_local_use", "64:ff9b:1::5db8:d70e", "local-use NAT64"},
		{"teredo_server_loopback", "2001:0:7f00:1::1", "carrying 127.0.0.1"},
		{"teredo_client_private", "2001:0:5db8:d70e::f5ff:fffe", "carrying 10.0.0.1"},
		{"teredo_public", "2001:0:4136:e378:8000:63bf:a2b6:7ef1", ""},
		{"isatap_loopback", "2001:db8:9::5efe:7f00:1", "carrying 127.0.0.1"},
		{"isatap_private", "2001:db8:9::200:5efe:a00:1", "carrying 10.0.0.1"},
		{"site_local", "fec0::1", "private"},
		{"unique_local", "fd12::1", "private"},
		{"ietf_protocol", "192.0.0.170", "IETF"},
		{"metadata", "169.254.169.254", "metadata"},
		{"unspecified_v6", "::", "unspecified"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := classify(netip.MustParseAddr(tc.addr), own)
			if tc.why == "" && got != "" || tc.why != "" && !strings.Contains(got, tc.why) {
				t.Errorf("classify(%s) = %q, want %q", tc.addr, got, tc.why)
			}
		})
	}
}

// The proxy refuses an on-link neighbour of this machine and an address
// that carries a local one, with the reason.
func TestDecideRefusesLocalNetworks(t *testing.T) {
	t.Parallel()
	p := New(Options{
		Rules:     func(string) (Rules, bool) { return Rules{Network: true}, true },
		LocalNets: func() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix("203.0.113.7/28")} },
	})
	for host, want := range map[string]string{
		"203.0.113.9":        "own network",
		"2002:7f00:1::":      "127.0.0.1",
		"::7f00:1":           "127.0.0.1",
		"64:ff9b::a00:1":     "10.0.0.1",
		"[2002:cb00:7109::]": "203.0.113.9",
	} {
		_, err := p.decide(context.Background(), "s", host, 443)
		var d *Denied
		if !errors.As(err, &d) || !strings.Contains(d.Rule, want) {
			t.Errorf("decide(%s) = %v, want a refusal naming %q", host, err, want)
		}
	}
	if _, err := p.decide(context.Background(), "s", "93.184.215.14", 443); err != nil {
		t.Errorf("a public address: %v", err)
	}
}
