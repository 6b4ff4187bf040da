package seatbelt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// loopbackDeny takes this machine's own services away again after the
// outbound allows ("*" includes localhost); the loopback rules after it
// give back single ports.
const loopbackDeny = `(deny network-outbound (remote ip "localhost:*"))`

// dnsRules let the system resolver answer: the mDNSResponder socket and
// its mach services. Only with some outbound rule: with the network off
// a name lookup is itself a way out.
const dnsRules = `(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))
(allow mach-lookup (global-name "com.apple.dnssd.service") (global-name "com.apple.trustd.agent"))
`

// directOutbound reports whether the sandbox may dial out itself: the
// network is on or connect ports are named, and no domain rule asks for
// names. Seatbelt filters by port, not by host, so a domain rule can only
// hold through the engine's proxy: with one, nothing dials out directly
// (fail closed).
func directOutbound(spec *backends.Spec) bool {
	return (spec.Network || len(spec.Ports.Connect) > 0) && len(spec.Ports.Domains) == 0
}

// networkRules writes the network part. Outbound rules name the remote
// side only: a (local ip ...) filter on outbound matches the source
// address and would let everything through.
func networkRules(w *writer, spec *backends.Spec) {
	w.line("; network")
	r := spec.Ports
	if directOutbound(spec) {
		if len(r.Connect) == 0 {
			w.line(`(allow network-outbound (remote tcp "*:*"))`)
		}
		for _, p := range r.Connect {
			w.line(`(allow network-outbound (remote tcp "*:` + strconv.Itoa(p) + `"))`)
		}
	}
	w.line(loopbackDeny)
	for _, p := range r.Loopback {
		w.line(`(allow network-outbound (remote tcp "localhost:` + strconv.Itoa(p) + `"))`)
	}
	// Listen ports: bound on loopback only, so that they are reachable
	// from this machine at 127.0.0.1 and from nowhere else.
	for _, p := range r.Listen {
		port := strconv.Itoa(p)
		w.line(`(allow network-bind (local tcp "localhost:` + port + `"))`)
		w.line(`(allow network-inbound (local tcp "localhost:` + port + `"))`)
	}
	if directOutbound(spec) {
		w.text(dnsRules)
	}
}

// NetworkNote says in words what a Seatbelt sandbox's network rules get,
// and what they do not.
func (b *Backend) NetworkNote(network bool, rules backends.PortRules) string {
	spec := &backends.Spec{Network: network, Ports: rules}
	parts := []string{"enforced by Seatbelt, per port: the sandbox shares this machine's network stack (no namespace, no proxy)"}
	switch {
	case !directOutbound(spec) && (network || len(rules.Connect) > 0):
		parts = append(parts, "outbound: none, because domain rules can only hold through the engine's proxy, which Seatbelt sandboxes do not get")
	case network && len(rules.Connect) == 0:
		parts = append(parts, "outbound: any address on any TCP port, private and link-local addresses included; names resolve through the system resolver")
	case len(rules.Connect) > 0:
		parts = append(parts, fmt.Sprintf("outbound: any address on TCP ports %v only, private and link-local addresses included; names resolve through the system resolver", rules.Connect))
	default:
		parts = append(parts, "outbound: none, and no name resolution")
	}
	if len(rules.Loopback) > 0 {
		parts = append(parts, fmt.Sprintf("this machine's services: TCP ports %v on 127.0.0.1 and ::1 only", rules.Loopback))
	} else {
		parts = append(parts, "this machine's services: none")
	}
	if len(rules.Listen) > 0 {
		parts = append(parts, fmt.Sprintf("listen ports %v: a bind to 127.0.0.1 or ::1 only (a server that binds all interfaces is refused)", rules.Listen))
	}
	return strings.Join(parts, "; ")
}
