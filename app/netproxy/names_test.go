package netproxy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

func TestNormalizeName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string // want "" is a refusal
	}{
		{"example.com", "example.com"},
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"example.com..", "example.com"},
		{"example.com...", "example.com"},
		{"a.localhost..", "a.localhost"},
		{"example\u3002com", "example.com"},  // ideographic full stop
		{"example.com\uff0e", "example.com"}, // full-width full stop, trailing
		{"\uff45xample.com", "example.com"},  // full-width e
		{"Bücher.de", "xn--bcher-kva.de"},
		{"xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"under_score.example.com", "under_score.example.com"},
		{"a..example.com", ""},
		{".example.com", ""},
		{"", ""},
		{".", ""},
		{"..", ""},
		{"exa\x00mple.com", ""},
		{"exam ple.com", ""},
		{"a\u202eb.com", ""},
		{"evil.com\r\nX: y", ""},
		{"-a.com", ""},
		{"xn--zz.com", ""},
		{"127.1", ""},
		{"0x7f.1", ""},
		{"2130706433", ""},
		{strings.Repeat("a.", 127) + "com", ""}, // 257 characters
		{strings.Repeat("a", 64) + ".com", ""},
	}
	for _, tc := range cases {
		got, err := normalizeName(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("normalizeName(%q) = %q, want a refusal", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("normalizeName(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// No spelling of a name gets past a deny rule, and the resolver is asked
// for the name the rules saw.
func TestDenyHoldsForEverySpelling(t *testing.T) {
	t.Parallel()
	var asked []string
	rules := map[string]Rules{
		"deny":  {Network: true, Ports: backends.PortRules{DenyDomains: []string{"*.localhost", "example.com"}, Loopback: []int{5432}}},
		"allow": {Network: true, Ports: backends.PortRules{Domains: []string{"example.com"}}},
	}
	p := New(Options{
		Rules: func(id string) (Rules, bool) { r, ok := rules[id]; return r, ok },
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			asked = append(asked, host)
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		},
	})
	for _, tc := range []struct {
		id, host string
		port     int
		ok       bool
	}{
		{"deny", "example.com", 443, false},
		{"deny", "example.com.", 443, false},
		{"deny", "example.com..", 443, false},
		{"deny", "EXAMPLE.com..", 443, false},
		{"deny", "example\u3002com", 443, false},
		{"deny", "\uff45xample.com", 443, false},
		{"deny", "www.example.com..", 443, true}, // an exact rule: not the subdomains
		{"deny", "localhost", 5432, false},       // "*.localhost" is the name and its subdomains
		{"deny", "a.localhost", 5432, false},
		{"deny", "a.localhost..", 5432, false},
		{"deny", "A.LOCALHOST.", 5432, false},
		{"deny", "a..b.com", 443, false}, // an empty label
		{"allow", "example.com..", 443, true},
		{"allow", "Example.COM.", 443, true},
		{"allow", "example.com.evil.test", 443, false},
	} {
		_, err := p.decide(context.Background(), tc.id, tc.host, tc.port)
		var d *Denied
		if tc.ok != (err == nil) || (err != nil && !errors.As(err, &d)) {
			t.Errorf("%s: decide(%q, %d) = %v, want ok=%v", tc.id, tc.host, tc.port, err, tc.ok)
		}
	}
	for _, a := range asked {
		if a != "example.com" && a != "www.example.com" {
			t.Errorf("the resolver was asked for %q, a spelling the rules did not see", a)
		}
	}
}
