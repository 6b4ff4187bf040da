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
	// Tenant is the sandbox's tenant ("" the owner's own): a loopback
	// rule never reaches a port another tenant's sandbox listens on.
	Tenant string
	// Secrets are the placeholders the sandbox's runs hold now.
	Secrets []SecretUse
}

// SecretUse is one secret a run of the sandbox holds a placeholder of.
type SecretUse struct {
	Name string
	// Token is the placeholder's random part, this run's alone.
	Token string
	// Hosts, Header, Format: as the secret says (app/secrets).
	Hosts  []string
	Header string
	Format string
}

// Placeholder is what the sandbox holds in place of the value.
func (s SecretUse) Placeholder() string { return Placeholder(s.Name, s.Token) }

// Placeholder spells a secret's placeholder.
func Placeholder(name, token string) string { return "<senclaw-secret:" + name + ":" + token + ">" }

// sendsTo reports whether the secret's value may go to host:port.
func (s SecretUse) sendsTo(host string, port int) bool {
	for _, h := range s.Hosts {
		if matchHostPattern(h, host, port, portHTTPS) {
			return true
		}
	}
	return false
}

// looksInto reports whether the proxy looks into the sandbox's
// connections to host:port (normalised): those of an HTTP rule's host
// and of a secret's.
func (r Rules) looksInto(host string, port int) bool {
	if len(httpRulesFor(r.Ports.AllowHTTP, host, port)) > 0 {
		return true
	}
	for _, s := range r.Secrets {
		if s.sendsTo(host, port) {
			return true
		}
	}
	return false
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
