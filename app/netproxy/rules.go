package netproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/net/idna"
)

// Rules are one sandbox's network rules as the proxy applies them.
type Rules struct {
	// Network on allows egress to any public address (on Connect ports
	// only, when Connect is not empty).
	Network bool
	Ports   backends.PortRules
	// ReachAPI lets a loopback rule name the engine's own API port (a
	// Space App with daemonApi, whose own token reaches only its own
	// routes); without it that port is never reachable.
	ReachAPI bool
}

// egress reports whether the rules allow any outbound connection at all.
func (r Rules) egress() bool { return r.Network || len(r.Ports.Connect) > 0 }

// MaxDomains bounds each domain list.
const MaxDomains = 64

// NormalizeDomains checks a domain list and returns it normalised: lower
// case, ASCII (IDNA), no trailing dot, sorted, without duplicates. A name
// is exact, or "*." followed by a name (the name and all its subdomains).
// Address literals are refused: rules about addresses are port rules.
// allow refuses names that can only mean this machine.
func NormalizeDomains(list []string, allow bool) ([]string, string, error) {
	if len(list) > MaxDomains {
		return nil, "", fmt.Errorf("at most %d names", MaxDomains)
	}
	out := make([]string, 0, len(list))
	for _, raw := range list {
		d, err := normalizeDomain(raw, allow)
		if err != nil {
			return nil, raw, err
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, "", nil
}

func normalizeDomain(raw string, allow bool) (string, error) {
	d := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(raw)), ".")
	wild := strings.HasPrefix(d, "*.")
	name := strings.TrimPrefix(d, "*.")
	if name == "" {
		return "", fmt.Errorf("is empty")
	}
	if strings.Contains(name, "*") {
		return "", fmt.Errorf("a wildcard is allowed only as a leading \"*.\"")
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return "", fmt.Errorf("is an address, not a name; use connect or loopback ports for addresses")
	}
	ascii, err := idna.Lookup.ToASCII(name)
	if err != nil {
		return "", fmt.Errorf("is not a valid domain name: %v", err)
	}
	if len(ascii) > 253 {
		return "", fmt.Errorf("is longer than 253 characters")
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return "", fmt.Errorf("is not a valid domain name")
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return "", fmt.Errorf("is not a valid domain name (character %q)", r)
			}
		}
	}
	if allow && (ascii == "localhost" || strings.HasSuffix(ascii, ".localhost") || ascii == "metadata.google.internal") {
		return "", fmt.Errorf("names this machine or a cloud metadata service; use loopback ports for this machine's services")
	}
	if wild {
		return "*." + ascii, nil
	}
	return ascii, nil
}

// matchDomain reports whether host matches one of the patterns.
func matchDomain(host string, patterns []string) bool {
	for _, p := range patterns {
		if base, ok := strings.CutPrefix(p, "*."); ok {
			if host == base || strings.HasSuffix(host, "."+base) {
				return true
			}
		} else if host == p {
			return true
		}
	}
	return false
}

var (
	metadataV4 = netip.MustParseAddr("169.254.169.254")
	metadataV6 = netip.MustParseAddr("fd00:ec2::254")
	cgnat      = netip.MustParsePrefix("100.64.0.0/10")
	thisNet    = netip.MustParsePrefix("0.0.0.0/8")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	benchmark  = netip.MustParsePrefix("198.18.0.0/15")
)

// classify says why a is not a public address, or "" when it is. own are
// this machine's addresses.
func classify(a netip.Addr, own []netip.Addr) string {
	a = a.Unmap()
	if nat64.Contains(a) {
		// 64:ff9b::a.b.c.d reaches a.b.c.d through a NAT64 gateway.
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	switch {
	case !a.IsValid():
		return "an invalid address"
	case a.IsLoopback():
		return "a loopback address (this machine)"
	case a.IsUnspecified() || thisNet.Contains(a):
		return "an unspecified address (this machine)"
	case a == metadataV4 || a == metadataV6:
		return "a cloud metadata address"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "a link-local address"
	case a.IsPrivate():
		return "a private network address"
	case cgnat.Contains(a):
		return "a shared (carrier-grade NAT) address"
	case benchmark.Contains(a):
		return "a benchmarking network address"
	case a.IsMulticast() || a.IsInterfaceLocalMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "a multicast or broadcast address"
	}
	if slices.Contains(own, a) {
		return "an address of this machine"
	}
	return ""
}

// hostLoopback reports whether a may serve a loopback rule: only the two
// loopback addresses themselves.
func hostLoopback(a netip.Addr) bool {
	a = a.Unmap()
	return a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || a == netip.IPv6Loopback()
}

// isLocalName reports whether host is a name that always means this
// machine; it is answered without asking any resolver.
func isLocalName(host string) bool {
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}
