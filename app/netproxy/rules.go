package netproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
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

// NormalizeDomains checks a domain list and returns it normalised as the
// proxy normalises every name it is asked for (normalizeName: lower case,
// ASCII, no trailing dots), sorted, without duplicates. A name
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
	d := strings.TrimSpace(raw)
	wild := strings.HasPrefix(d, "*.")
	name := strings.TrimPrefix(d, "*.")
	if strings.Contains(name, "*") {
		return "", fmt.Errorf("a wildcard is allowed only as a leading \"*.\"")
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return "", fmt.Errorf("is an address, not a name; use connect or loopback ports for addresses")
	}
	name, err := normalizeName(name)
	if err != nil {
		return "", err
	}
	if allow && (isLocalName(name) || name == "metadata.google.internal") {
		return "", fmt.Errorf("names this machine or a cloud metadata service; use loopback ports for this machine's services")
	}
	if wild {
		return "*." + name, nil
	}
	return name, nil
}
