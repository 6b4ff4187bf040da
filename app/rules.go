package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// MountResult is the answer of AddMount.
type MountResult struct {
	Mount backends.Mount `json:"mount"`
	// At is where the folder appears inside the sandbox.
	At string `json:"at"`
	// Note says when the change takes effect.
	Note string `json:"note"`
}

// AddMount gives the sandbox a host folder at target (relative to its
// workspace). The same checks as on create apply.
func (e *Engine) AddMount(id string, m backends.Mount) (*MountResult, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	next := append(slices.Clone(sb.Mounts), m)
	up, err := e.Update(id, SandboxConfig{Mounts: next})
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Field = strings.Replace(fe.Field, fmt.Sprintf("mounts[%d].", len(next)-1), "", 1)
		}
		return nil, err
	}
	added := up.Mounts[len(up.Mounts)-1]
	return &MountResult{Mount: added, At: up.Workspace + "/" + added.Target, Note: e.changeNote(up)}, nil
}

// RemoveMount takes the mount at target away. The host folder is not
// touched.
func (e *Engine) RemoveMount(id, target string) (*Sandbox, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(sb.Mounts, func(m backends.Mount) bool { return m.Target == strings.Trim(target, "/") })
	if i < 0 {
		return nil, badField("target", target, "is not a mount of this sandbox")
	}
	next := slices.Delete(slices.Clone(sb.Mounts), i, i+1)
	return e.Update(id, SandboxConfig{Mounts: next})
}

// SetFsMode changes what the sandbox may read.
func (e *Engine) SetFsMode(id, mode string) (*Sandbox, error) {
	return e.Update(id, SandboxConfig{FsMode: &mode})
}

// PortsResult is the answer of SetPorts.
type PortsResult struct {
	Sandbox     *Sandbox           `json:"sandbox"`
	Ports       backends.PortRules `json:"ports"`
	ReachableAt []string           `json:"reachableAt"`
	// Note says precisely what is and is not enforced, and by what.
	Note string `json:"note"`
}

// SetPorts replaces the sandbox's port rules: each list replaces the old
// one, and an omitted (nil) list means empty. Domain lists stay as they
// are; SetPortRules replaces them too.
func (e *Engine) SetPorts(ctx context.Context, id string, listen, connect, loopback []int) (*PortsResult, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	return e.SetPortRules(ctx, id, backends.PortRules{Listen: listen, Connect: connect, Loopback: loopback,
		Domains: sb.Ports.Domains, DenyDomains: sb.Ports.DenyDomains})
}

// SetPortRules replaces all of the sandbox's network rules: ports and
// domain lists, each list replacing the old one (nil means empty).
// Connect, loopback and domain changes apply to the next connection of
// runs already going; listen ports from the next run.
func (e *Engine) SetPortRules(ctx context.Context, id string, r backends.PortRules) (*PortsResult, error) {
	orEmpty := func(l []int) []int {
		if l == nil {
			return []int{}
		}
		return l
	}
	names := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	sb, err := e.Update(id, SandboxConfig{Listen: orEmpty(r.Listen), Connect: orEmpty(r.Connect), Loopback: orEmpty(r.Loopback),
		Domains: names(r.Domains), DenyDomains: names(r.DenyDomains)})
	if err != nil {
		return nil, err
	}
	res := &PortsResult{Sandbox: sb, Ports: sb.Ports, ReachableAt: []string{}}
	for _, p := range sb.Ports.Listen {
		res.ReachableAt = append(res.ReachableAt, fmt.Sprintf("127.0.0.1:%d", p))
	}
	res.Note = e.networkNote(ctx, sb)
	return res, nil
}

// networkNote says in words what the sandbox's network rules get, by
// which layer, and what they do not cover, and which Unix sockets it
// reaches.
func (e *Engine) networkNote(ctx context.Context, sb *Sandbox) string {
	backend := sb.Backend
	if backend == "" {
		if b, _ := e.probes.best(ctx); b != nil {
			backend = b.Name()
		}
	}
	note := e.netNote(sb, backend)
	if u := e.unixSocketNote(backend); u != "" {
		note += "; " + u
	}
	return note
}

// netNote is the network part of networkNote.
func (e *Engine) netNote(sb *Sandbox, backend string) string {
	if b := e.probes.find(backend); b != nil {
		if n, ok := b.(networkNoter); ok {
			return n.NetworkNote(sb.Network, sb.Ports)
		}
	}
	switch {
	case backend == "direct":
		return "the direct backend enforces nothing: the code shares this machine's network, so the network switch, port and domain rules are advisory only"
	case backend != "bwrap" && backend != "docker" && backend != "landlock":
		return "no isolating backend is available; runs are refused"
	case !wantsNetwork(sb) && backend == "landlock":
		return "network off (enforced by landlock): no socket can be made (seccomp) and no TCP port reached (Landlock); names do not resolve, and this machine's services are unreachable"
	case !wantsNetwork(sb):
		return fmt.Sprintf("network off (enforced by %s): the sandbox has its own network namespace with loopback only and no route out; names do not resolve, and this machine's services are unreachable", backend)
	}
	r := sb.Ports
	landlock := backend == "landlock"
	parts := []string{fmt.Sprintf("enforced by %s and the engine's proxy: the sandbox has its own network namespace with loopback only; traffic leaves only through the engine's proxy, reached inside at 127.0.0.1:%d (HTTP, CONNECT) and 127.0.0.1:%d (SOCKS5), set in HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (upper and lower case) and for npm, pip, git and curl; Node's fetch, http and https go through it by a NODE_OPTIONS preload (unless the run sets NODE_OPTIONS itself)", backend, netfwd.HTTPPort, netfwd.SOCKSPort)}
	if landlock {
		parts[0] = "enforced by landlock and the engine's proxy: there is no network namespace; the sandbox may make only TCP sockets (seccomp) and connect only to its run's own door to the proxy on 127.0.0.1, a port picked for each run and set in HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (upper and lower case), SENCLAW_PROXY_PORT and for npm, pip, git and curl; Node's fetch, http and https go through it by a NODE_OPTIONS preload (unless the run sets NODE_OPTIONS itself). Landlock's rules name ports, not addresses: a program that ignores the proxy could reach that one port number on another host"
	}
	switch {
	case sb.Network && len(r.Connect) == 0:
		parts = append(parts, "outbound: any public address on any port")
	case len(r.Connect) > 0:
		parts = append(parts, fmt.Sprintf("outbound: public addresses on ports %v only", r.Connect))
	default:
		parts = append(parts, "outbound: none (the network is off; only the rules below)")
	}
	if len(r.Domains) > 0 {
		parts = append(parts, fmt.Sprintf("only the names %s (address literals are refused)", strings.Join(r.Domains, ", ")))
	}
	if len(r.DenyDomains) > 0 {
		parts = append(parts, fmt.Sprintf("never the names %s (deny wins over allow)", strings.Join(r.DenyDomains, ", ")))
	}
	parts = append(parts, "addresses are checked after the proxy resolves the name, and it connects to the address it checked: loopback, link-local, private (10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10), cloud metadata and this machine's own addresses are refused")
	switch {
	case len(r.Loopback) > 0 && landlock:
		parts = append(parts, fmt.Sprintf("this machine's services: ports %v at 127.0.0.1 and ::1 only, through the proxy (a direct connect is refused)", r.Loopback))
	case len(r.Loopback) > 0:
		parts = append(parts, fmt.Sprintf("this machine's services: ports %v at 127.0.0.1 and ::1 only, also forwarded as 127.0.0.1:PORT inside the sandbox", r.Loopback))
	default:
		parts = append(parts, "this machine's services: none")
	}
	parts = append(parts, "the engine's own API is never reachable")
	switch {
	case len(r.Listen) > 0 && landlock:
		parts = append(parts, fmt.Sprintf("listen ports %v: bound by the code itself in this machine's network, where a bind to 0.0.0.0 is reachable from the LAN; refused unless landlockListen is on in the settings", r.Listen))
	case len(r.Listen) > 0:
		parts = append(parts, fmt.Sprintf("listen ports %v: reachable from this machine at 127.0.0.1 only, forwarded while a run of the sandbox is going; a port already in use on this machine refuses the run", r.Listen))
	}
	if landlock {
		return strings.Join(append(parts, "names resolve only in the proxy (DNS needs UDP, which cannot be sent); UDP, raw and Unix sockets cannot be made; programs that ignore the proxy variables get no network",
			"changes to connect, loopback and domains apply to the next connection, also of runs already going"), "; ")
	}
	parts = append(parts, "names resolve only in the proxy (there is no resolver inside, so no DNS); UDP and other non-TCP traffic is not forwarded; programs that ignore the proxy variables get no network except the forwarded loopback ports",
		"changes to connect, loopback and domains apply to the next connection, also of runs already going; listen ports and newly added loopback ports take effect from the next run (they need the forwarder of a new run)")
	if e.opts.Forwarder == "" {
		parts = append(parts, "NOT AVAILABLE: the forwarder senclaw-netfwd was not found, so runs of this sandbox are refused until it is built (make build)")
	}
	return strings.Join(parts, "; ")
}

// networkNoter is a backend that says itself what its network rules get
// (Seatbelt, Windows: no namespace, no proxy).
type networkNoter interface {
	NetworkNote(network bool, rules backends.PortRules) string
}

// CreateNote says what a new sandbox gets, in words: when it starts and
// what its network rules get from its backend.
func (e *Engine) CreateNote(ctx context.Context, sb *Sandbox) string {
	start := "each run starts its own isolated process"
	if sb.Backend == "docker" {
		start = "the container starts on the first run"
	}
	note := start + "; " + e.networkNote(ctx, sb)
	if w := e.widenedNote(sb); w != "" {
		note += "; " + w
	}
	if m := e.idmapNote(sb); m != "" {
		note += "; " + m
	}
	return note
}

// ChangeNote says when a configuration change takes effect.
func (e *Engine) ChangeNote(sb *Sandbox) string { return e.changeNote(sb) }

// changeNote says when a configuration change takes effect, and which
// folders only the mountAllow setting lets the sandbox have.
func (e *Engine) changeNote(sb *Sandbox) string {
	note := "takes effect on the next run; runs already going keep what they started with"
	if sb.Backend == "docker" {
		note = "the container is recreated before its next run (workspace files are kept); network rules other than the switch never need that"
	}
	if w := e.widenedNote(sb); w != "" {
		note += "; " + w
	}
	if m := e.idmapNote(sb); m != "" {
		note += "; " + m
	}
	return note
}
