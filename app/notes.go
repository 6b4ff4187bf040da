package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// RunNotes says what a run got: its note names the rules it asked for
// and did not get (its record's missing), empty when everything held;
// the details are the limits that held. What the shell guard matched in
// a run it let go on (guard.sandbox warn) comes first in the note and
// is a detail.
func RunNotes(rec *RunRecord) Notes {
	n := Notes{Details: nonNil(rec.Enforced), Warnings: nonNil(rec.Missing)}
	for _, line := range rec.Policy {
		n.Details = append(slices.Clip(n.Details), "policy: "+line)
	}
	switch len(rec.Missing) {
	case 0:
	case 1:
		n.Note = "not enforced: " + rec.Missing[0]
	default:
		subjects := make([]string, len(rec.Missing))
		for i, m := range rec.Missing {
			subjects[i], _, _ = strings.Cut(m, ":")
		}
		n.Note = fmt.Sprintf("%d rules were not enforced (%s); see the warnings", len(rec.Missing), strings.Join(subjects, ", "))
	}
	if len(rec.Guard) > 0 {
		g := "shell guard (warn, guard.sandbox): " + rec.Guard[0]
		if len(rec.Guard) > 1 {
			g += fmt.Sprintf(" (and %d more; see the details)", len(rec.Guard)-1)
		}
		n.Note = strings.TrimSuffix(g+"; "+n.Note, "; ")
		n.Details = append([]string{}, n.Details...)
		for _, m := range rec.Guard {
			n.Details = append(n.Details, "the shell guard would refuse this on the host: "+m)
		}
	}
	return n
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// CreateNotes says what a new sandbox gets: its backend, network and
// listen ports in the note; when it starts and what each layer enforces
// in the details.
func (e *Engine) CreateNotes(ctx context.Context, sb *Sandbox) Notes {
	backend := e.noteBackend(ctx, sb)
	host := e.directHostExec(ctx, sb)
	n := e.networkNotes(sb, host.backend(backend))
	n.Note = fmt.Sprintf("sandbox %s (%s): %s", sb.Name, host.label(backend), host.note(n.Note))
	start := "each run starts its own isolated process"
	if sb.Backend == "docker" {
		start = "the container starts on the first run"
	}
	n.Details = append([]string{start}, n.Details...)
	if w := e.widenedNote(sb); w != "" {
		n.Details = append(n.Details, w)
	}
	if m := e.idmapNote(sb); m != "" {
		n.Details = append(n.Details, m)
	}
	n.Warnings = append(n.Warnings, fsWarnings(sb, host.backend(backend))...)
	host.add(&n)
	return n
}

// ChangeNotes says when a configuration change takes effect and what the
// sandbox's network now gets, and which folders only the mountAllow
// setting lets it have.
func (e *Engine) ChangeNotes(ctx context.Context, sb *Sandbox) Notes {
	backend := e.noteBackend(ctx, sb)
	host := e.directHostExec(ctx, sb)
	n := e.networkNotes(sb, host.backend(backend))
	when := "takes effect on the next run; runs already going keep what they started with"
	if sb.Backend == "docker" {
		when = "the container is recreated before its next run (workspace files are kept); network rules other than the switch never need that"
	}
	n.Note = fmt.Sprintf("sandbox %s (%s): %s; %s", sb.Name, host.label(backend), host.note(n.Note), firstClause(when))
	n.Details = append([]string{when}, n.Details...)
	if w := e.widenedNote(sb); w != "" {
		n.Details = append(n.Details, w)
	}
	if m := e.idmapNote(sb); m != "" {
		n.Details = append(n.Details, m)
	}
	n.Warnings = append(n.Warnings, fsWarnings(sb, host.backend(backend))...)
	host.add(&n)
	return n
}

// FsModeNotes says whether the sandbox's backend applies its fs mode.
func (e *Engine) FsModeNotes(ctx context.Context, sb *Sandbox) Notes {
	host := e.directHostExec(ctx, sb)
	n := Notes{Details: []string{}, Warnings: fsWarnings(sb, host.backend(sb.Backend))}
	switch {
	case sb.Backend == "docker":
		n.Note = "a docker sandbox sees only its image and its mounts: the fs mode does not apply to it"
	case host.state == hostRunConfined:
		n.Note = "the fs mode does not apply: your runs on the direct backend are host exec, confined by Landlock to the workspace (and your tenant's directory) to write and the system roots to read"
	case host.state == hostRunRefused:
		n.Note = "the fs mode does not apply: your runs on the direct backend, host exec, are refused (exec.tenantHostPolicy)"
	case sb.Backend == "direct":
		n.Note = "the direct backend enforces nothing: the fs mode is advisory only"
	default:
		n.Note = "fs mode " + string(sb.FsMode) + " (" + FsModeLabel(sb.FsMode) + "): takes effect on the next run"
		n.Details = append(n.Details, "writes stay jailed to the workspace and read-write mounts in every mode")
	}
	host.add(&n)
	return n
}

// hostRun is what the tenant host policy makes of the caller's runs on
// a direct sandbox (gate.go, hostpolicy.go): the owner's run as they
// always did, with no isolation; every other principal's are host exec,
// refused, confined by Landlock, or (where Landlock is not) unconfined.
type hostRun struct {
	state string
	// why is the detail that says so, "" for the owner's.
	why string
}

// The states of hostRun; "" is the owner's (or not a direct sandbox).
const (
	hostRunRefused    = "refused"
	hostRunConfined   = "confined"
	hostRunUnconfined = "unconfined"
)

// directHostExec says what the caller's runs on sb get when sb is on the
// direct backend and the caller is not the owner; nothing otherwise. It
// records nothing.
func (e *Engine) directHostExec(ctx context.Context, sb *Sandbox) hostRun {
	who := principal.Of(ctx)
	if sb.Backend != "direct" || who.IsOwner() || !e.Settings().AllowDirect {
		return hostRun{}
	}
	pol := e.tenantHostPolicy()
	conf := e.hostConfinement(ctx, false)
	lead := fmt.Sprintf("the direct backend runs commands on this machine: for %s that is host exec, which exec.tenantHostPolicy (%s) governs", who, pol)
	switch state := hostOutcome(pol, conf.ok, who.Tenant); {
	case pol != HostPolicyAllow && pol != HostPolicyWarn:
		return hostRun{state, lead + "; deny keeps host exec for the owner, so your runs here are refused; use an isolating backend (bwrap, landlock, docker, or none named)"}
	case state == hostRunConfined:
		return hostRun{state, lead + "; your runs here are confined by Landlock (isolation landlock (host exec)): the workspace and your tenant's directory to write, the system roots to read, nothing else; the fs mode does not apply"}
	case state == hostRunRefused:
		return hostRun{state, lead + "; Landlock is not available for host exec (" + conf.why + "), and under warn a tenant's commands never run unconfined on the host, so your runs here are refused; use an isolating backend"}
	default:
		return hostRun{state, lead + "; Landlock is not available for host exec (" + conf.why + "), so your runs here are unconfined (a command naming a tenant's directory is refused)"}
	}
}

// backend is the backend whose rules the caller's runs get: Landlock's
// for a confined host exec, else the sandbox's own.
func (h hostRun) backend(b string) string {
	if h.state == hostRunConfined {
		return "landlock"
	}
	return b
}

// label names the backend in a note.
func (h hostRun) label(b string) string {
	if h.state == hostRunConfined {
		return b + ": " + isolationHostExec
	}
	return b
}

// note is the note's line about the network, or the refusal instead.
func (h hostRun) note(line string) string {
	if h.state == hostRunRefused {
		return "your runs here are refused (exec.tenantHostPolicy)"
	}
	return line
}

// add puts the host exec's detail in n, a warning when its runs are
// refused or unconfined.
func (h hostRun) add(n *Notes) {
	if h.why == "" {
		return
	}
	n.Details = append(n.Details, h.why)
	if h.state != hostRunConfined {
		n.Warnings = append(n.Warnings, "host exec: "+h.why)
	}
}

// fsWarnings are the fs rules asked for that backend does not apply.
func fsWarnings(sb *Sandbox, backend string) []string {
	var w []string
	switch {
	case backend == "docker" && sb.FsMode != "" && sb.FsMode != backends.FsStrict:
		w = append(w, "fs mode "+string(sb.FsMode)+" does not apply: a container sees only its image, the workspace and the mounts")
	case backend == "direct":
		w = append(w, "fs mode and limits: the direct backend enforces nothing")
	}
	return nonNil(w)
}

// firstClause is s up to its first ";" or "(".
func firstClause(s string) string {
	if i := strings.IndexAny(s, ";("); i > 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// noteBackend is the backend the sandbox's runs get: its own, or the
// best one for a sandbox that leaves the choice to the engine.
func (e *Engine) noteBackend(ctx context.Context, sb *Sandbox) string {
	if sb.Backend != "" {
		return sb.Backend
	}
	if b, _ := e.probes.best(ctx); b != nil {
		return b.Name()
	}
	return "none"
}

// networkNotes says what the sandbox's network rules get from backend:
// the note in one line, the details by layer, and as warnings the rules
// that backend does not enforce.
func (e *Engine) networkNotes(sb *Sandbox, backend string) Notes {
	n := Notes{Note: netLine(sb, backend), Details: e.netDetails(sb, backend), Warnings: []string{}}
	if u := e.unixSocketNote(backend); u != "" {
		n.Details = append(n.Details, u)
	}
	if wantsNetwork(sb) || len(sb.Ports.Domains) > 0 {
		switch backend {
		case "direct":
			n.Warnings = append(n.Warnings, "network: the direct backend enforces nothing; the network switch, port and domain rules are advisory only")
		case "windows":
			n.Warnings = append(n.Warnings, "network: the restricted token does not isolate the network; the port and domain rules are advisory only")
		}
	}
	return n
}

// netLine says in one line what the sandbox's network is: off, on (and
// to what), this machine's ports, and where its listen ports are
// reachable. A sandbox with the network off and only listen ports says
// exactly that.
func netLine(sb *Sandbox, backend string) string {
	r := sb.Ports
	var parts []string
	switch {
	case backend == "direct":
		return "no isolation: the network rules are advisory"
	case !isolating(backend) && backend != "seatbelt" && backend != "windows":
		return "no isolating backend is available: runs are refused"
	case len(r.Connect) > 0:
		parts = append(parts, "network on: public addresses on ports "+portWords(r.Connect))
	case sb.Network:
		parts = append(parts, "network on: public addresses")
	default:
		parts = append(parts, "network off")
	}
	if len(r.Domains) > 0 {
		parts = append(parts, "only the names "+strings.Join(r.Domains, ", "))
	}
	if len(r.AllowHTTP) > 0 {
		var hosts []string
		for _, h := range r.AllowHTTP {
			if !slices.Contains(hosts, h.Host) {
				hosts = append(hosts, h.Host)
			}
		}
		parts = append(parts, "HTTP rules for "+strings.Join(hosts, ", "))
	}
	if len(sb.Secrets) > 0 {
		parts = append(parts, "secrets "+strings.Join(sb.Secrets, ", ")+" as placeholders")
	}
	if len(r.Loopback) > 0 {
		parts = append(parts, "this machine's ports "+portWords(r.Loopback))
	}
	if len(r.Listen) > 0 {
		at := make([]string, len(r.Listen))
		for i, p := range r.Listen {
			at[i] = fmt.Sprintf("127.0.0.1:%d", p)
		}
		parts = append(parts, "listening at "+strings.Join(at, ", "))
	}
	return strings.Join(parts, "; ")
}

func isolating(backend string) bool {
	return backend == "bwrap" || backend == "docker" || backend == "landlock"
}

// portWords is "443" or "80, 443".
func portWords(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}

// netDetails says what each layer does with the sandbox's network rules,
// and what they do not cover.
func (e *Engine) netDetails(sb *Sandbox, backend string) []string {
	if b := e.probes.find(backend); b != nil {
		if n, ok := b.(networkNoter); ok {
			return strings.Split(n.NetworkNote(sb.Network, sb.Ports), "; ")
		}
	}
	switch {
	case backend == "direct":
		return []string{"the direct backend enforces nothing: the code shares this machine's network, so the network switch, port and domain rules are advisory only"}
	case !isolating(backend):
		return []string{"no isolating backend is available; runs are refused"}
	case !wantsNetwork(sb) && backend == "landlock":
		return []string{"network off (enforced by landlock): no socket can be made (seccomp) and no TCP port reached (Landlock); names do not resolve, and this machine's services are unreachable"}
	case !wantsNetwork(sb):
		return []string{fmt.Sprintf("network off (enforced by %s): the sandbox has its own network namespace with loopback only and no route out; names do not resolve, and this machine's services are unreachable", backend)}
	}
	r := sb.Ports
	landlock := backend == "landlock"
	parts := []string{fmt.Sprintf("enforced by %s and the engine's proxy: the sandbox has its own network namespace with loopback only; traffic leaves only through the engine's proxy, reached inside at 127.0.0.1:%d (HTTP, CONNECT) and 127.0.0.1:%d (SOCKS5), set in HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (upper and lower case) and for npm, pip, git and curl; Node's fetch, http and https go through it by a NODE_OPTIONS preload (unless the run sets NODE_OPTIONS itself)", backend, netfwd.HTTPPort, netfwd.SOCKSPort)}
	if landlock {
		parts[0] = "enforced by landlock and the engine's proxy: there is no network namespace; the sandbox may make only TCP sockets (seccomp) and connect only to its run's own door to the proxy on 127.0.0.1, a port picked for each run and set in HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (upper and lower case), SENCLAW_PROXY_PORT and for npm, pip, git and curl; Node's fetch, http and https go through it by a NODE_OPTIONS preload (unless the run sets NODE_OPTIONS itself)"
		if ok, why := unixguard.Available(); ok {
			parts = append(parts, "the engine answers every connect, bind and listen of the run (seccomp user notification), so a connect reaches that one address, not the door's port on another host")
		} else {
			parts = append(parts, "Landlock's rules name ports, not addresses, and the engine's connect guard cannot run here ("+why+"): a program that ignores the proxy could reach that one port number on another host")
		}
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
	case len(r.Listen) > 0 && landlock && landlockBindsLoopback():
		parts = append(parts, fmt.Sprintf("listen ports %v: bound by the code itself in this machine's network, on a loopback address only (the engine answers bind and listen), so reachable from this machine only", r.Listen))
	case len(r.Listen) > 0 && landlock:
		parts = append(parts, fmt.Sprintf("listen ports %v: bound by the code itself in this machine's network, where a bind to 0.0.0.0 is reachable from the LAN; refused unless landlockListen is on in the settings", r.Listen))
	case len(r.Listen) > 0:
		parts = append(parts, fmt.Sprintf("listen ports %v: reachable from this machine at 127.0.0.1 only, forwarded while a run of the sandbox is going; a port already in use on this machine refuses the run", r.Listen))
	}
	if landlock {
		return append(parts, "names resolve only in the proxy (DNS needs UDP, which cannot be sent); UDP, raw and Unix sockets cannot be made; programs that ignore the proxy variables get no network",
			"changes to connect, loopback and domains apply to the next connection, also of runs already going")
	}
	parts = append(parts, "names resolve only in the proxy (there is no resolver inside, so no DNS); UDP and other non-TCP traffic is not forwarded; programs that ignore the proxy variables get no network except the forwarded loopback ports",
		"changes to connect, loopback and domains apply to the next connection, also of runs already going; listen ports and newly added loopback ports take effect from the next run (they need the forwarder of a new run)")
	if e.opts.Forwarder == "" {
		parts = append(parts, "NOT AVAILABLE: the forwarder senclaw-netfwd was not found, so runs of this sandbox are refused until it is built (make build)")
	}
	return parts
}

// networkNoter is a backend that says itself what its network rules get
// (Seatbelt, Windows: no namespace, no proxy).
type networkNoter interface {
	NetworkNote(network bool, rules backends.PortRules) string
}
