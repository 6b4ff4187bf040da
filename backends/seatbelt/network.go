package seatbelt

import (
	"strconv"

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
