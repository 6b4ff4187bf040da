// Package netproxy is the engine's egress proxy for Linux sandboxes. Every
// bwrap and Docker sandbox has its own network namespace with no route
// out; the only way out is a Unix socket bound into it, on which this
// proxy answers HTTP (CONNECT and absolute-form) and SOCKS5. The socket a
// connection arrives on says which sandbox it comes from, so the proxy
// applies that sandbox's current rules to every connection: connect ports,
// domain allow and deny lists, loopback ports, and the address check after
// resolution (loopback, link-local, private, metadata addresses, this
// machine's own addresses and on-link networks, and IPv6 addresses that
// carry any of these are refused unless a loopback rule names the port).
// Every name is normalised once before any rule sees it. Names
// resolve here, never inside the sandbox, and the proxy connects to the
// address it checked, so DNS rebinding gains nothing. Refusals are counted
// per sandbox.
//
// For the hosts of a sandbox's HTTP rules and secrets the proxy looks into
// the connection (intercept.go): it terminates TLS with a certificate of
// the engine's CA, judges each request by method and path, swaps a
// secret's placeholder for its value on the way to the secret's hosts
// only, and refuses, with 403 and X-Senclaw-Refused, what the rules do
// not allow. Every other host stays a tunnel.
//
// The proxy also forwards a sandbox's listen ports: 127.0.0.1:P on the host
// is relayed to the forwarder's Unix socket for P inside the sandbox.
package netproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Proxy.
type Options struct {
	// Rules returns a sandbox's current rules; false means it is gone.
	// It is called for every connection, so rule changes apply at once.
	Rules func(sandboxID string) (Rules, bool)
	// ListenTenant reports the tenant of the sandbox that listens on a
	// port of this machine (its listen rules), if any: a loopback rule
	// never reaches another tenant's.
	ListenTenant func(port int) (tenant string, ok bool)
	// ProtectedAddr reports addresses of this machine that are never
	// reachable, whatever the rules and TreatAsRemote say: the API's LAN
	// listener.
	ProtectedAddr func(netip.AddrPort) bool
	// CrossTenant, when set, hears of each connection refused because it
	// asked for another tenant's listen port (a security event).
	CrossTenant func(id string, port int)
	// Protected reports ports of this machine that are never reachable,
	// whatever the rules say (the engine's own API).
	Protected func(port int) bool
	// Resolve resolves a name (normalised: lower case, ASCII, no trailing
	// dot); nil uses the system resolver. Tests override it so that no
	// query leaves the machine.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// TreatAsRemote, when set, exempts an address from the local-address
	// check (tests stand in for remote hosts with 127.0.0.1 servers). Nil
	// in production: the check is always on.
	TreatAsRemote func(netip.AddrPort) bool
	// LocalNets lists this machine's interface addresses with their
	// prefixes (192.168.1.20/24); nil uses net.InterfaceAddrs (cached for
	// a while).
	LocalNets func() []netip.Prefix
	// OnRefused is told about each refusal (optional).
	OnRefused func(sandboxID string, r Refusal)
	// OnAllowed is told about each connection the rules let through
	// (optional): the name or address asked for, the port, and whether
	// it is this machine's (a loopback rule's). Learn mode reads it.
	OnAllowed func(sandboxID, host string, port int, loopback bool)
	// OnRequest is told about each request the proxy looked into and
	// sent on (optional): the host, its port, the method and the path.
	// Learn mode reads it to propose HTTP rules.
	OnRequest func(sandboxID, host string, port int, method, path string)
	// CA signs the certificates of the hosts the proxy looks into (those
	// of a secret or an HTTP rule); nil looks into none.
	CA interface {
		Leaf(host string) (*tls.Certificate, error)
	}
	// UpstreamRoots returns the roots a looked-into host's own
	// certificate is verified with: the owner's pinned CA for that host,
	// or nil for this machine's trust store. Verification is never
	// skipped.
	UpstreamRoots func(host string, port int) *x509.CertPool
	// SecretValue returns a secret's value, for the requests to its
	// hosts only.
	SecretValue func(name string) ([]byte, error)
	Logger      *slog.Logger
}

// Proxy is the egress proxy. Create it with New; Close ends every session.
type Proxy struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	denials  map[string]*denials

	ownMu   sync.Mutex
	own     []netip.Prefix
	ownTime time.Time

	// upstreams are the kept connections to the hosts the proxy looks
	// into (upstream.go).
	upstreams upstreams
}

// New returns a Proxy.
func New(opts Options) *Proxy {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Protected == nil {
		opts.Protected = func(int) bool { return false }
	}
	return &Proxy{opts: opts, log: log, sessions: map[string]*session{}, denials: map[string]*denials{}}
}

// dialTimeout bounds the connection to a target.
const dialTimeout = 15 * time.Second

// Denied is a refusal by rule.
type Denied struct {
	Host string
	Port int
	// Rule names what refused it, in words.
	Rule string
	// Allow says how to allow it ("" when nothing can).
	Allow string
}

func (d *Denied) Error() string {
	return fmt.Sprintf("SenClaw refused %s: %s", net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), d.Rule)
}

// decide checks host:port against the sandbox's rules and returns the
// address to connect to. A *Denied error is a refusal by rule; any other
// error is a failure (resolution).
func (p *Proxy) decide(ctx context.Context, id, host string, port int) (netip.AddrPort, error) {
	allow := ""
	deny := func(rule string, args ...any) (netip.AddrPort, error) {
		return netip.AddrPort{}, p.refuseConnect(id, host, port, fmt.Sprintf(rule, args...), allow)
	}
	r, ok := p.opts.Rules(id)
	if !ok {
		return deny("the sandbox no longer exists")
	}
	if port < 1 || port > 65535 {
		return deny("not a valid port")
	}
	lit, err := netip.ParseAddr(strings.Trim(host, "[]"))
	isName := err != nil
	if isName {
		// From here on, every rule and the resolver see the name in one
		// spelling only.
		name, err := normalizeName(host)
		if err != nil {
			host = clipHost(host)
			return deny("the name %s", err)
		}
		host = name
	} else {
		host = lit.String()
	}
	inLoopback := slices.Contains(r.Ports.Loopback, port) && (!p.opts.Protected(port) || r.ReachAPI)
	if isName {
		if matchDomain(host, r.Ports.DenyDomains) {
			allow = "take " + host + " out of the sandbox's denyDomains (sbx_ports denyDomains)"
			return deny("the name is in the sandbox's denyDomains")
		}
	} else if len(r.Ports.Domains) > 0 && !(hostLoopback(lit) && inLoopback) {
		// A loopback rule is about this machine, not names: it holds.
		allow = "reach it by a name in the sandbox's domains"
		return deny("only the names in the sandbox's domains are allowed, not address literals")
	}
	// Refuse by port before resolving: a sandbox that may not go out
	// learns nothing, and no query leaves for it.
	egressPort := r.egress() && (len(r.Ports.Connect) == 0 || slices.Contains(r.Ports.Connect, port))
	var addrs []netip.Addr
	switch {
	case !isName:
		addrs = []netip.Addr{lit}
	case isLocalName(host):
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	default:
		if len(r.Ports.Domains) > 0 && !matchDomain(host, r.Ports.Domains) {
			allow = "add " + host + " to the sandbox's domains (sbx_ports domains)"
			return deny("the name is not in the sandbox's domains")
		}
		if !egressPort {
			allow = egressAllow(r, port)
			return deny("%s", p.egressRule(r, port))
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		addrs, err = p.resolve(rctx, host)
		cancel()
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("resolving %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return netip.AddrPort{}, fmt.Errorf("resolving %s: no address", host)
		}
	}
	var why string
	for _, a := range addrs {
		a = a.Unmap()
		ap := netip.AddrPortFrom(a, uint16(port))
		if p.opts.ProtectedAddr != nil && p.opts.ProtectedAddr(ap) {
			why = ap.String() + " is the engine's own API (its LAN listener), never reachable from a sandbox"
			continue
		}
		local := classify(a, p.ownNets())
		if p.opts.TreatAsRemote != nil && p.opts.TreatAsRemote(ap) {
			local = ""
		}
		switch {
		case local == "" && egressPort:
			p.recordAllowed(id)
			if p.opts.OnAllowed != nil {
				p.opts.OnAllowed(id, host, port, false)
			}
			return ap, nil
		case local == "":
			why, allow = p.egressRule(r, port), egressAllow(r, port)
		case hostLoopback(a) && inLoopback && p.crossTenant(r, port) != "":
			why = p.crossTenant(r, port)
			if p.opts.CrossTenant != nil {
				p.opts.CrossTenant(id, port)
			}
		case hostLoopback(a) && inLoopback:
			p.recordAllowed(id)
			if p.opts.OnAllowed != nil {
				p.opts.OnAllowed(id, host, port, true)
			}
			return ap, nil
		case hostLoopback(a) && p.opts.Protected(port):
			why, allow = "port "+strconv.Itoa(port)+" is the engine's own API, never reachable from a sandbox", ""
		case hostLoopback(a):
			why = fmt.Sprintf("%s is %s and port %d is not in the sandbox's loopback ports", a, local, port)
			allow = fmt.Sprintf("add %d to the sandbox's loopback ports (sbx_ports loopback) to reach this machine's service", port)
		default:
			why = fmt.Sprintf("%s is %s; only public addresses are reachable (loopback ports allow 127.0.0.1 and ::1 only)", a, local)
			allow = ""
		}
	}
	return deny("%s", why)
}

// egressAllow says how to let port go out.
func egressAllow(r Rules, port int) string {
	if !r.egress() {
		return fmt.Sprintf("turn the sandbox's network on (sbx_update network: true), or add %d to its connect ports (sbx_ports connect)", port)
	}
	return fmt.Sprintf("add %d to the sandbox's connect ports (sbx_ports connect)", port)
}

// crossTenant says why a loopback rule of r may not reach port, "" when
// it may: a port a sandbox of another tenant listens on is never
// reached; a tenant's sandbox reaches this machine's services only on
// its own tenant's listen ports (the owner's unauthenticated local
// services are not a tenant's).
func (p *Proxy) crossTenant(r Rules, port int) string {
	if p.opts.ListenTenant == nil {
		return ""
	}
	t, ok := p.opts.ListenTenant(port)
	switch {
	case ok && t != r.Tenant:
		return fmt.Sprintf("port %d is a listen port of another tenant's sandbox, which no sandbox of another tenant reaches", port)
	case !ok && r.Tenant != "":
		return fmt.Sprintf("port %d is no listen port of this tenant's own sandboxes: a tenant's sandbox reaches this machine's services only there", port)
	}
	return ""
}

// egressRule says why port may not go out.
func (p *Proxy) egressRule(r Rules, port int) string {
	if !r.egress() {
		return "the sandbox's network is off (only its loopback ports are open)"
	}
	return fmt.Sprintf("port %d is not in the sandbox's connect ports %v", port, r.Ports.Connect)
}

// resolve resolves a normalised name. The system resolver is asked for
// the rooted name ("example.com."), so that no search domain turns it into
// a name the rules did not see.
func (p *Proxy) resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	if p.opts.Resolve != nil {
		return p.opts.Resolve(ctx, name)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", name+".")
}

// maxHostShown bounds a refused host as it is kept and shown: what the
// sandbox sent may be as long as a request head.
const maxHostShown = 255

func clipHost(h string) string {
	if len(h) <= maxHostShown {
		return h
	}
	return strings.ToValidUTF8(h[:maxHostShown], "") + "…"
}

// dial connects to the checked address; the name is never resolved again.
func dial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	return d.DialContext(ctx, "tcp", ap.String())
}
