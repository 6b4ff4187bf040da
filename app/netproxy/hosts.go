package netproxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// A host pattern names the hosts an HTTP rule or a secret applies to:
// "api.github.com", "*.example.com" (the name and its subdomains) or an
// address literal, each with an optional ":PORT". Without a port a
// pattern means the usual ports of its use: 443 for a secret (secrets
// go over HTTPS only), 443 and 80 for an HTTP rule.

// NormalizeHostPattern checks a host pattern and returns it in the one
// spelling the proxy matches against (normalizeName for names).
func NormalizeHostPattern(raw string) (string, error) {
	name, port, err := parseHostPattern(raw)
	if err != nil {
		return "", err
	}
	if port == 0 {
		return name, nil
	}
	if strings.Contains(name, ":") {
		return "[" + name + "]:" + strconv.Itoa(port), nil
	}
	return name + ":" + strconv.Itoa(port), nil
}

// parseHostPattern splits a pattern into its host (normalised, "*." kept)
// and its port (0: none given).
func parseHostPattern(raw string) (string, int, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", 0, errors.New("is empty")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ ") {
		return "", 0, errors.New("is not a host: give HOST or HOST:PORT, without a scheme or a path")
	}
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("has the port %q; ports are 1 to 65535", p)
		}
		host, port = h, n
	} else if strings.Count(s, ":") == 1 {
		return "", 0, fmt.Errorf("is not HOST:PORT: %v", err)
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.Unmap().String(), port, nil
	}
	wild := strings.HasPrefix(host, "*.")
	name, err := normalizeName(strings.TrimPrefix(host, "*."))
	if err != nil {
		return "", 0, err
	}
	if strings.Contains(name, "*") {
		return "", 0, errors.New("a wildcard is allowed only as a leading \"*.\"")
	}
	if wild {
		name = "*." + name
	}
	return name, port, nil
}

// matchHostPattern reports whether host:port (host normalised) is one of
// pattern's, a pattern without a port taking the ports in defaults.
func matchHostPattern(pattern, host string, port int, defaults ...int) bool {
	name, p, err := parseHostPattern(pattern)
	if err != nil {
		return false
	}
	return portMatches(p, port, defaults) && matchDomain(host, []string{name})
}

// portMatches reports whether port is a pattern's port p, or one of the
// defaults when the pattern gives none (p 0).
func portMatches(p, port int, defaults []int) bool {
	if p != 0 {
		return p == port
	}
	return slices.Contains(defaults, port)
}

// MatchHostPattern reports whether host:port (host normalised) is one of
// pattern's; a pattern without a port means 443.
func MatchHostPattern(pattern, host string, port int) bool {
	return matchHostPattern(pattern, host, port, portHTTPS)
}

// HTTPS and HTTP ports, the defaults of host patterns.
const (
	portHTTPS = 443
	portHTTP  = 80
)
