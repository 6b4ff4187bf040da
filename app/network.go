package app

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/netproxy"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// Network enforcement on Linux: every bwrap and Docker sandbox
// has its own network namespace with nothing but loopback. When its rules
// ask for network, the runner binds a per-sandbox directory holding the
// engine's proxy socket into it, and the forwarder (senclaw-netfwd) in
// front of the command relays in-sandbox loopback ports to that proxy.
// The proxy (app/netproxy) applies the sandbox's current rules to each
// connection.

// wantsNetwork reports whether sb's rules ask for any network at all.
func wantsNetwork(sb *Sandbox) bool { return sb.Network || !sb.Ports.Empty() }

// netGuard keeps what the proxy needs to know besides the store: the
// engine's own API ports, and the rules of sandboxes that have no row
// (one-shot runs).
type netGuard struct {
	mu        sync.Mutex
	protected []int
	oneShots  map[string]netproxy.Rules
	// lan are the API's LAN listeners (ProtectLAN).
	lan []netip.AddrPort
}

// ProtectPort marks a port of this machine as the engine's own API: no
// sandbox reaches it, and a loopback rule naming it is refused. main (the
// API server) calls it once it listens.
func (e *Engine) ProtectPort(port int) {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	if !slices.Contains(e.net.protected, port) {
		e.net.protected = append(e.net.protected, port)
	}
}

// ProtectLAN marks ap, the API's LAN listener, as the engine's own: no
// sandbox reaches it, whatever its rules. An unspecified address
// (0.0.0.0) protects the port on every address of this machine, loopback
// included.
func (e *Engine) ProtectLAN(ap netip.AddrPort) {
	e.net.mu.Lock()
	e.net.lan = append(e.net.lan, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	e.net.mu.Unlock()
	if ap.Addr().IsUnspecified() {
		e.ProtectPort(int(ap.Port()))
	}
}

// protectedAddr reports whether ap is the API's LAN listener.
func (e *Engine) protectedAddr(ap netip.AddrPort) bool {
	e.net.mu.Lock()
	lan := slices.Clone(e.net.lan)
	e.net.mu.Unlock()
	a := ap.Addr().Unmap()
	for _, l := range lan {
		if l.Port() != ap.Port() {
			continue
		}
		if a == l.Addr() || (l.Addr().IsUnspecified() && (a.IsLoopback() || a.IsUnspecified() || ownAddress(a))) {
			return true
		}
	}
	return false
}

// ownAddress reports whether a is an address of one of this machine's
// interfaces now (asked afresh: an interface may have come since).
func ownAddress(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // fail closed: what cannot be told apart is refused
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}

func (e *Engine) protectedPort(port int) bool {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	return slices.Contains(e.net.protected, port)
}

// netRules gives the proxy a sandbox's current rules: read from the store
// for every connection, so edits apply to the next connection.
func (e *Engine) netRules(id string) (netproxy.Rules, bool) {
	var sb Sandbox
	if err := e.store.GetSandbox(id, &sb); err == nil {
		return netproxy.Rules{Network: sb.Network, Ports: sb.Ports, ReachAPI: sb.APIAccess, Tenant: sb.Tenant, Secrets: e.uses.of(id)}, true
	}
	e.net.mu.Lock()
	r, ok := e.net.oneShots[id]
	e.net.mu.Unlock()
	if ok {
		r.Secrets = e.uses.of(id)
	}
	return r, ok
}

// netDir is the host directory of sandbox id's network plumbing.
func (e *Engine) netDir(id string) string { return filepath.Join(e.opts.DataDir, "net", id) }

// ErrNoForwarder explains how to get the forwarder.
const noForwarder = "this run needs network (the network is on or port rules are set), which on Linux goes through the engine's proxy and its in-sandbox forwarder senclaw-netfwd, and no forwarder was found next to the senclaw executable or on PATH (one in a folder another user may write is passed over, and the engine's log says so); build it with `make build`, or `CGO_ENABLED=0 go build -o senclaw-netfwd ./backends/netfwd/cmd/senclaw-netfwd` and put it next to senclaw. Runs with the network off work without it"

// plumbNetwork gives spec the network plumbing its sandbox's rules ask
// for, and returns what to call when the run ends. A backend without a
// barrier (direct) gets none: its note says that nothing is enforced. Any
// failure refuses the run: nothing runs with rules that do not hold.
func (e *Engine) plumbNetwork(p *plan, b backends.Backend, spec *backends.Spec) (func(), error) {
	sb := p.sb
	if !wantsNetwork(sb) || (b.Name() != "bwrap" && b.Name() != "docker" && b.Name() != "landlock") {
		return func() {}, nil
	}
	// Landlock has no namespace to forward into: its sandbox binds its
	// listen ports itself, and reaches the proxy without the forwarder.
	landlock := b.Name() == "landlock"
	if landlock && len(sb.Ports.Listen) > 0 && !landlockBindsLoopback() && !e.Settings().LandlockListen {
		return nil, refused("listen ports %v under the landlock backend would bind in this machine's own network (Landlock has no network namespace), where a bind to 0.0.0.0 is reachable from the LAN; use the bwrap or docker backend, drop the listen ports, or turn landlockListen on in the settings if you accept that", sb.Ports.Listen)
	}
	if db, ok := b.(*docker.Backend); ok && db.Elsewhere() {
		return e.plumbRelay(p, db, spec)
	}
	var fwd string
	if !landlock {
		var err error
		if fwd, err = e.forwarder(b, spec.User, noForwarder); err != nil {
			return nil, err
		}
	}
	uid, gid := -1, -1
	if u := spec.User; u != nil {
		uid, gid = int(u.UID), int(u.GID)
	}
	dir := e.netDir(sb.ID)
	if err := netproxy.PrepareDir(dir, uid, gid); err != nil {
		return nil, err
	}
	bundle, err := e.caBundle(sb)
	if err != nil {
		return nil, err
	}
	trustCA := bundle != nil
	if trustCA {
		if err := netproxy.WriteCABundle(dir, bundle); err != nil {
			return nil, err
		}
	}
	if sb.Kind == "oneshot" {
		e.net.mu.Lock()
		if e.net.oneShots == nil {
			e.net.oneShots = map[string]netproxy.Rules{}
		}
		e.net.oneShots[sb.ID] = netproxy.Rules{Network: sb.Network, Ports: sb.Ports, Tenant: sb.Tenant}
		e.net.mu.Unlock()
	}
	forwarded := sb.Ports.Listen
	if landlock {
		forwarded = nil
	}
	release, err := e.proxy.Acquire(sb.ID, dir, forwarded)
	if err != nil {
		e.forgetOneShot(sb)
		var pe *netproxy.PortInUseError
		if errors.As(err, &pe) {
			return nil, refused("%s", pe.Error())
		}
		return nil, err
	}
	var loop []int
	for _, q := range sb.Ports.Loopback {
		if !e.protectedPort(q) || sb.APIAccess {
			loop = append(loop, q)
		}
	}
	spec.Net = &backends.NetPlumbing{Dir: dir, Forwarder: fwd, Listen: sb.Ports.Listen, Loopback: loop,
		Refused: func(from, why string) { e.proxy.RefusedBefore(sb.ID, from, why) }}
	spec.Env = netEnv(spec.Env, userSets(p, "NODE_OPTIONS"), trustCA)
	return func() {
		release()
		e.forgetOneShot(sb)
		if sb.Kind == "oneshot" {
			_ = os.RemoveAll(dir)
			e.proxy.Forget(sb.ID)
		}
	}, nil
}

// plumbRelay is plumbNetwork for a sandbox on another machine: its
// traffic comes to the engine's proxy over its container's relay (the
// backend's attached exec), and 127.0.0.1:P on this machine reaches its
// listen port P the same way, never through a port published there.
func (e *Engine) plumbRelay(p *plan, b *docker.Backend, spec *backends.Spec) (func(), error) {
	sb := p.sb
	if e.opts.Forwarder == "" {
		return nil, refused("%s", noForwarder)
	}
	// Nothing of this machine is bound there: the backend writes the CA
	// bundle into the container before the run, and its traffic comes
	// back over the relay to the same proxy, which looks into the hosts
	// of the sandbox's HTTP rules and secrets as it does for a local
	// one. The secrets' values never leave this machine.
	bundle, err := e.caBundle(sb)
	if err != nil {
		return nil, err
	}
	if sb.Kind == "oneshot" {
		e.net.mu.Lock()
		if e.net.oneShots == nil {
			e.net.oneShots = map[string]netproxy.Rules{}
		}
		e.net.oneShots[sb.ID] = netproxy.Rules{Network: sb.Network, Ports: sb.Ports, Tenant: sb.Tenant}
		e.net.mu.Unlock()
	}
	serve, release, err := e.proxy.AcquireRelay(sb.ID, sb.Ports.Listen, func(port int) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return b.DialListen(ctx, sb.ID, port)
	})
	if err != nil {
		e.forgetOneShot(sb)
		var pe *netproxy.PortInUseError
		if errors.As(err, &pe) {
			return nil, refused("%s", pe.Error())
		}
		return nil, err
	}
	var loop []int
	for _, q := range sb.Ports.Loopback {
		if !e.protectedPort(q) || sb.APIAccess {
			loop = append(loop, q)
		}
	}
	spec.Net = &backends.NetPlumbing{Forwarder: e.opts.Forwarder, Listen: sb.Ports.Listen, Loopback: loop, Serve: serve, CABundle: bundle}
	spec.Env = netEnv(spec.Env, userSets(p, "NODE_OPTIONS"), bundle != nil)
	return func() {
		release()
		e.forgetOneShot(sb)
		if sb.Kind == "oneshot" {
			e.proxy.Forget(sb.ID)
		}
	}, nil
}

// caBundle is the CA bundle sb's runs trust (this machine's roots and
// the engine's proxy CA), so that the hosts of its HTTP rules and secrets
// (which may change while it runs) work without flags. A CA that cannot
// be made refuses only the runs that need it: the others get nil.
func (e *Engine) caBundle(sb *Sandbox) ([]byte, error) {
	bundle, err := e.ca.Bundle()
	if err == nil {
		return bundle, nil
	}
	if len(sb.Ports.AllowHTTP) > 0 || len(sb.Secrets) > 0 {
		return nil, refused("the sandbox's HTTP rules or secrets need the proxy to look into TLS with the engine's CA, which could not be made: %v", err)
	}
	e.log.Warn("The proxy's CA could not be made; sandboxes get no CA bundle.", "err", err)
	return nil, nil
}

func (e *Engine) forgetOneShot(sb *Sandbox) {
	if sb.Kind != "oneshot" {
		return
	}
	e.net.mu.Lock()
	delete(e.net.oneShots, sb.ID)
	e.net.mu.Unlock()
}

// forgetNetwork drops a deleted sandbox's plumbing directory and counters.
func (e *Engine) forgetNetwork(id string) {
	if id != "" && !strings.ContainsAny(id, "/.") {
		_ = os.RemoveAll(e.netDir(id))
	}
	e.proxy.Forget(id)
}

// userSets reports whether the sandbox's or the run's own env sets name.
func userSets(p *plan, name string) bool {
	_, a := p.sb.Env[name]
	_, b := p.req.Env[name]
	return a || b
}

// CABundlePath is where a sandbox finds this machine's roots and the
// engine's proxy CA.
const CABundlePath = netfwd.MountDir + "/" + netfwd.CABundle

// caVars point the usual TLS clients at the CA bundle: OpenSSL (curl,
// Python's ssl, wget), requests, Node, pip, curl and git.
var caVars = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "PIP_CERT", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// netEnv adds the proxy variables, in upper and lower case, to env (K=V,
// sorted), keeping any the run sets itself. NODE_OPTIONS gets the preload
// that routes Node's fetch, http and https through the proxy (Node 20
// ignores the variables), composed with the tracer's hook when that is
// there, unless the user sets NODE_OPTIONS.
func netEnv(env []string, userNodeOptions, trustCA bool) []string {
	httpProxy := "http://127.0.0.1:" + strconv.Itoa(netfwd.HTTPPort)
	socks := "socks5h://127.0.0.1:" + strconv.Itoa(netfwd.SOCKSPort)
	noProxy := "localhost,127.0.0.1,::1"
	vars := map[string]string{
		"HTTP_PROXY": httpProxy, "HTTPS_PROXY": httpProxy, "ALL_PROXY": socks, "NO_PROXY": noProxy,
		"http_proxy": httpProxy, "https_proxy": httpProxy, "all_proxy": socks, "no_proxy": noProxy,
		"npm_config_proxy": httpProxy, "npm_config_https_proxy": httpProxy, "npm_config_noproxy": noProxy,
		"PIP_PROXY":          httpProxy,
		"SENCLAW_PROXY_PORT": strconv.Itoa(netfwd.HTTPPort),
	}
	if trustCA {
		for _, k := range caVars {
			vars[k] = CABundlePath
		}
	}
	have := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		have[k] = i
	}
	for k, v := range vars {
		if _, ok := have[k]; !ok {
			env = append(env, k+"="+v)
		}
	}
	if !userNodeOptions {
		pre := "--require " + netfwd.MountDir + "/" + netfwd.NodePreload
		if i, ok := have["NODE_OPTIONS"]; ok {
			env[i] += " " + pre // the tracer's hook first, then ours
		} else {
			env = append(env, "NODE_OPTIONS="+pre)
		}
	}
	slices.Sort(env)
	return env
}

// checkDomains validates a domain list for field.
func checkDomains(field string, list []string, allow bool) ([]string, error) {
	out, bad, err := netproxy.NormalizeDomains(list, allow)
	if err != nil {
		if bad == "" {
			return nil, badField(field, len(list), "%v", err)
		}
		return nil, badField(field, bad, "%v", err)
	}
	return out, nil
}

// checkNetPorts refuses what cannot work inside the namespace: the
// forwarder's own ports, a port both listened on and called on the host,
// and the engine's own API.
func (e *Engine) checkNetPorts(r backends.PortRules) error {
	for _, p := range r.Listen {
		if netfwd.Reserved(p) {
			return badField("listenPorts", p, "is taken inside every sandbox by the proxy forwarder (HTTP %d, SOCKS5 %d); pick another port", netfwd.HTTPPort, netfwd.SOCKSPort)
		}
		if slices.Contains(r.Loopback, p) {
			return badField("loopbackPorts", p, "is also a listen port: inside the sandbox one port cannot be both its own server and this machine's service")
		}
	}
	for _, p := range r.Loopback {
		if netfwd.Reserved(p) {
			return badField("loopbackPorts", p, "is taken inside every sandbox by the proxy forwarder (HTTP %d, SOCKS5 %d); a service of this machine on that port cannot be forwarded", netfwd.HTTPPort, netfwd.SOCKSPort)
		}
		if e.protectedPort(p) {
			return badField("loopbackPorts", p, "is the engine's own API port, which no sandbox may ever reach")
		}
	}
	return nil
}

// NetworkDenials says how many connections of the sandbox the proxy
// refused since the engine started, and the last distinct refused hosts.
func (e *Engine) NetworkDenials(id string) (int, []string) { return e.proxy.Denials(id) }

// landlockBindsLoopback reports whether Landlock runs bind their listen
// ports on a loopback address only: the engine answers their bind and
// listen calls where the kernel can run its guard (unixguard's inet
// rules). Elsewhere they bind where the code says, and listen ports need
// the landlockListen setting.
func landlockBindsLoopback() bool {
	ok, _ := unixguard.Available()
	return ok
}
