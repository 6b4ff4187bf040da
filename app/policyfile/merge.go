package policyfile

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// Layer is one policy file and where it is (for notes and sources).
type Layer struct {
	Path string
	File File
}

// Value is one key of the effective policy and the layer that decided it.
type Value struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
}

// Effective is the merged policy: its values, each with its source, and
// the project's keys that were ignored, one note each.
type Effective struct {
	File File `json:"-"`
	// Decided are the keys the project's file decided.
	Decided map[string]bool `json:"-"`
	Values  []Value         `json:"values"`
	Notes   []string        `json:"notes"`
}

// fsRank orders the fs modes from the narrowest.
func fsRank(m string) int {
	return slices.Index([]string{string(backends.FsStrict), string(backends.FsAllowlist), string(backends.FsOpen)}, m)
}

// Merge narrows base (the owner's layer, every key set) by project (nil:
// none). A project key that would widen base is ignored, with a note
// naming it; a key only the owner may set is ignored the same way.
func Merge(base Layer, project *Layer) Effective {
	m := merger{base: base, eff: clone(base.File)}
	if project != nil {
		m.project = *project
		m.narrow(project.File)
	}
	m.values()
	return Effective{File: m.eff, Decided: m.from, Values: m.out, Notes: append([]string{}, m.notes...)}
}

type merger struct {
	base, project Layer
	eff           File
	from          map[string]bool // keys the project decided
	notes         []string
	out           []Value
}

func (m *merger) ignore(key string, value any, why string) {
	m.notes = append(m.notes, fmt.Sprintf("%s: %s %s ignored: %s; a project's policy can only narrow the owner's (%s)", m.project.Path, key, show(value), why, m.base.Path))
}

func (m *merger) took(key string) {
	if m.from == nil {
		m.from = map[string]bool{}
	}
	m.from[key] = true
}

func show(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case *bool:
		return fmt.Sprint(*v)
	case *int:
		return fmt.Sprint(*v)
	case *float64:
		return fmt.Sprint(*v)
	}
	return fmt.Sprint(v)
}

func (m *merger) narrow(p File) {
	if p.FsMode != "" {
		if fsRank(p.FsMode) > fsRank(m.eff.FsMode) {
			m.ignore("fsMode", p.FsMode, fmt.Sprintf("the owner's is %q, which reads less", m.eff.FsMode))
		} else {
			m.eff.FsMode = p.FsMode
			m.took("fsMode")
		}
	}
	if p.Allowlist != nil {
		var keep []string
		for i, path := range p.Allowlist {
			if covered(path, m.eff.Allowlist) {
				keep = append(keep, path)
			} else {
				m.ignore(fmt.Sprintf("allowlist[%d]", i), path, "it is not in (nor below a folder of) the owner's allowlist")
			}
		}
		m.eff.Allowlist = nonNil(keep)
		m.took("allowlist")
	}
	if p.Network != nil {
		if *p.Network && !*m.eff.Network {
			m.ignore("network", p.Network, "the owner's policy has the network off")
		} else {
			m.eff.Network = p.Network
			m.took("network")
		}
	}
	if len(p.AllowedDomains) > 0 {
		var keep []string
		for i, d := range p.AllowedDomains {
			if len(m.eff.AllowedDomains) == 0 || domainCovered(d, m.eff.AllowedDomains) {
				keep = append(keep, d)
			} else {
				m.ignore(fmt.Sprintf("allowedDomains[%d]", i), d, "the owner's allowedDomains do not allow it")
			}
		}
		if len(keep) == 0 {
			// No name the project asked for is allowed: none is, rather
			// than the owner's whole list (fail closed).
			m.eff.Network = ptr(false)
			m.took("network")
			m.notes = append(m.notes, fmt.Sprintf("%s: none of allowedDomains is allowed by the owner's policy, so the run has no network", m.project.Path))
		} else {
			m.eff.AllowedDomains = keep
			m.took("allowedDomains")
		}
	}
	m.narrowHTTP(p.HTTPRules)
	if p.Ports != nil {
		if m.eff.Ports == nil {
			m.eff.Ports = &Ports{}
		}
		m.eff.Ports.Listen = m.ports("ports.listen", p.Ports.Listen, m.eff.Ports.Listen, false)
		// No connect list is any port (with the network on).
		m.eff.Ports.Connect = m.ports("ports.connect", p.Ports.Connect, m.eff.Ports.Connect, true)
		if p.Ports.Connect != nil && len(m.eff.Ports.Connect) == 0 && deref(m.eff.Network) {
			// An empty connect list is any port to the proxy: none left
			// is no network (fail closed), as for allowedDomains.
			m.eff.Network = ptr(false)
			m.took("network")
			m.notes = append(m.notes, fmt.Sprintf("%s: no port of ports.connect is allowed by the owner's policy, so the run has no network", m.project.Path))
		}
		m.eff.Ports.Loopback = m.ports("ports.loopback", p.Ports.Loopback, m.eff.Ports.Loopback, false)
	}
	if l := p.Limits; l != nil {
		if m.eff.Limits == nil {
			m.eff.Limits = &Limits{}
		}
		e := m.eff.Limits
		if l.CPUs != nil {
			if e.CPUs != nil && *l.CPUs > *e.CPUs {
				m.ignore("limits.cpus", l.CPUs, fmt.Sprintf("the owner's most is %g", *e.CPUs))
			} else {
				e.CPUs = l.CPUs
				m.took("limits.cpus")
			}
		}
		m.limit("limits.memoryMb", l.MemoryMB, &e.MemoryMB)
		m.limit("limits.pids", l.Pids, &e.Pids)
		m.limit("limits.timeoutMs", l.TimeoutMs, &e.TimeoutMs)
		m.limit("limits.diskMb", l.DiskMB, &e.DiskMB)
	}
	m.eff.Env = m.names("env", p.Env, m.eff.Env)
	m.eff.Secrets = m.names("secrets", p.Secrets, m.eff.Secrets)
	for _, k := range []struct {
		key string
		set bool
	}{{"mountAllow", p.MountAllow != nil}, {"allowDirect", p.AllowDirect != nil}, {"allowedSockets", p.AllowedSockets != nil}, {"agentShell", p.AgentShell != nil}} {
		if k.set {
			m.notes = append(m.notes, fmt.Sprintf("%s: %s ignored: only the owner's policy (%s) may set it", m.project.Path, k.key, m.base.Path))
		}
	}
}

func (m *merger) ports(key string, asked, owner []int, anyIfNil bool) []int {
	if asked == nil {
		return owner
	}
	var keep []int
	for i, p := range asked {
		if (anyIfNil && owner == nil) || slices.Contains(owner, p) {
			keep = append(keep, p)
		} else {
			m.ignore(fmt.Sprintf("%s[%d]", key, i), p, "the owner's policy does not allow this port")
		}
	}
	m.took(key)
	return nonNilInts(keep)
}

func (m *merger) limit(key string, asked *int, owner **int) {
	if asked == nil {
		return
	}
	if *owner != nil && **owner > 0 && *asked > **owner {
		m.ignore(key, asked, fmt.Sprintf("the owner's most is %d", **owner))
		return
	}
	*owner = asked
	m.took(key)
}

func (m *merger) names(key string, asked, owner []string) []string {
	if asked == nil {
		return owner
	}
	var keep []string
	for i, n := range asked {
		if owner == nil || slices.Contains(owner, n) {
			keep = append(keep, n)
		} else {
			m.ignore(fmt.Sprintf("%s[%d]", key, i), n, "the owner's policy does not list it")
		}
	}
	m.took(key)
	return nonNil(keep)
}

// values lists the effective policy, key by key, with its source.
func (m *merger) values() {
	add := func(key string, v any) {
		src := m.base.Path
		if m.from[key] {
			src = m.project.Path
		}
		m.out = append(m.out, Value{Key: key, Value: v, Source: src})
	}
	e := m.eff
	add("fsMode", e.FsMode)
	add("allowlist", nonNil(e.Allowlist))
	add("network", deref(e.Network))
	add("allowedDomains", nonNil(e.AllowedDomains))
	add("httpRules", nonNilRules(e.HTTPRules))
	ports := Ports{}
	if e.Ports != nil {
		ports = *e.Ports
	}
	add("ports.listen", nonNilInts(ports.Listen))
	add("ports.connect", nonNilInts(ports.Connect))
	add("ports.loopback", nonNilInts(ports.Loopback))
	l := Limits{}
	if e.Limits != nil {
		l = *e.Limits
	}
	add("limits.cpus", derefF(l.CPUs))
	add("limits.memoryMb", derefI(l.MemoryMB))
	add("limits.pids", derefI(l.Pids))
	add("limits.timeoutMs", derefI(l.TimeoutMs))
	add("limits.diskMb", derefI(l.DiskMB))
	add("env", e.Env)
	add("secrets", e.Secrets)
}

// Covered reports whether path is one of dirs or lies below one.
func Covered(path string, dirs []string) bool { return covered(path, dirs) }

// covered reports whether path is one of dirs or lies below one.
func covered(path string, dirs []string) bool {
	path = filepath.Clean(path)
	for _, d := range dirs {
		d = filepath.Clean(d)
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// DomainCovered reports whether the name d (or *.name) is allowed by
// allowed, every name it matches included.
func DomainCovered(d string, allowed []string) bool { return domainCovered(d, allowed) }

// FsWider reports whether fs mode a reads more than b.
func FsWider(a, b string) bool { return fsRank(a) > fsRank(b) }

// domainCovered reports whether every name d matches is matched by one
// of allowed (exact names, or *.name for the name and its subdomains).
func domainCovered(d string, allowed []string) bool {
	d = strings.ToLower(strings.TrimSuffix(d, "."))
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSuffix(a, "."))
		if base, ok := strings.CutPrefix(a, "*."); ok {
			name := strings.TrimPrefix(d, "*.")
			if name == base || strings.HasSuffix(name, "."+base) {
				return true
			}
		} else if d == a {
			return true
		}
	}
	return false
}

func clone(f File) File {
	c := f
	c.Allowlist = slices.Clone(f.Allowlist)
	c.AllowedDomains = slices.Clone(f.AllowedDomains)
	c.HTTPRules = slices.Clone(f.HTTPRules)
	c.Env = slices.Clone(f.Env)
	c.Secrets = slices.Clone(f.Secrets)
	if f.Network == nil {
		c.Network = ptr(false)
	}
	if f.Ports != nil {
		p := Ports{Listen: slices.Clone(f.Ports.Listen), Connect: slices.Clone(f.Ports.Connect), Loopback: slices.Clone(f.Ports.Loopback)}
		c.Ports = &p
	}
	if f.Limits != nil {
		l := *f.Limits
		c.Limits = &l
	}
	return c
}

func ptr[T any](v T) *T { return &v }

func deref(b *bool) bool { return b != nil && *b }

func derefI(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

func derefF(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func nonNilInts(l []int) []int {
	if l == nil {
		return []int{}
	}
	return l
}

func nonNilRules(l []backends.HTTPRule) []backends.HTTPRule {
	if l == nil {
		return []backends.HTTPRule{}
	}
	return l
}

// narrowHTTP takes the project's HTTP rules. The proxy lets a request
// through when any rule naming its host and port allows it, so a rule
// only narrows a host no rule of the owner's names; where one does (by
// another spelling, a port, or a "*." on either side), the project's
// rule is taken only when it allows nothing that the owner's rules for
// each such host do not (every method and path of it within one of
// them). The project's rules for exactly the host of some of the owner's
// then replace those. Any other is ignored, and the owner's rules hold.
func (m *merger) narrowHTTP(rules []backends.HTTPRule) {
	var taken bool
	m.eff.HTTPRules, taken = narrowRules(m.base.File.HTTPRules, m.eff.HTTPRules, rules, func(i int, why string) {
		m.ignore(fmt.Sprintf("httpRules[%d]", i), rules[i].Host, why+", which the owner's rules for this host do not allow; they hold")
	})
	if taken {
		m.took("httpRules")
	}
}

// NarrowHTTP bounds asked (a run's own HTTP rules) by policy (the
// effective policy's) as a project's rules are bounded by the owner's:
// a rule of asked is kept where it allows nothing more on the hosts it
// shares with the policy's, and then takes the place of the policy's
// for exactly its host. It returns the rules the run gets and a note
// for each rule of asked it left out.
func NarrowHTTP(policy, asked []backends.HTTPRule) ([]backends.HTTPRule, []string) {
	var notes []string
	out, _ := narrowRules(policy, slices.Clone(policy), asked, func(i int, why string) {
		notes = append(notes, fmt.Sprintf("allowHttp rule for %s left out: %s, which the policy's rules for this host do not allow; they hold", asked[i].Host, why))
	})
	return out, notes
}

// narrowRules adds to eff each rule of asked that allows nothing base's
// rules do not on the hosts they share (hostRuleWithin), in place of
// eff's rules for exactly its host; ignore hears of each other one.
func narrowRules(base, eff, asked []backends.HTTPRule, ignore func(i int, why string)) ([]backends.HTTPRule, bool) {
	replaced := map[string]bool{}
	taken := false
	for i, r := range asked {
		rp, ok := parseHost(r.Host)
		if !ok {
			ignore(i, "it is not a host the proxy matches (HOST, *.HOST or HOST:PORT)")
			continue
		}
		if why := hostRuleWithin(r, rp, base); why != "" {
			ignore(i, why)
			continue
		}
		if key := rp.String(); !replaced[key] {
			replaced[key] = true
			eff = slices.DeleteFunc(eff, func(o backends.HTTPRule) bool {
				op, ok := parseHost(o.Host)
				return ok && op == rp
			})
		}
		eff = append(eff, r)
		taken = true
	}
	return eff, taken
}

// hostRuleWithin says what r (whose host is rp) allows on a host that
// one of owner's rules names but none of them allows ("" when nothing).
// For each owner rule whose hosts meet r's, the hosts of both are
// checked against the owner's rules that name every one of them: on
// those hosts the proxy has at least these.
func hostRuleWithin(r backends.HTTPRule, rp hostPattern, owner []backends.HTTPRule) string {
	for _, o := range owner {
		op, ok := parseHost(o.Host)
		if !ok {
			// A rule the proxy cannot read limits nothing; the owner's
			// file is checked for them (Parse's caller): fail closed.
			return "it meets an owner's rule for " + o.Host + " that cannot be read"
		}
		both, meet := op.meet(rp)
		if !meet {
			continue
		}
		var cover []backends.HTTPRule
		for _, c := range owner {
			if cp, ok := parseHost(c.Host); ok && cp.covers(both) {
				cover = append(cover, c)
			}
		}
		if why := ruleWithin(r, cover); why != "" {
			return why + " on " + both.String()
		}
	}
	return ""
}

// hostPattern is an HTTP rule's host: a name (lower case, no trailing
// dot), with wild for "*.name" (the name and its subdomains), and a port
// (0: 443 and 80, as the proxy takes a rule without one).
type hostPattern struct {
	name string
	wild bool
	port int
}

// parseHost reads a rule's host as the proxy's host patterns are
// spelled (netproxy.NormalizeHostPattern's; the engine normalises the
// files' rules before a merge).
func parseHost(raw string) (hostPattern, bool) {
	s := strings.ToLower(strings.TrimSpace(raw))
	var h hostPattern
	if host, port, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return h, false
		}
		s, h.port = host, n
	} else if strings.Count(s, ":") == 1 {
		return h, false
	}
	s = strings.Trim(s, "[]")
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		h.wild, s = true, rest
	}
	h.name = strings.TrimRight(s, ".")
	if h.name == "" || strings.ContainsAny(h.name, "*/?#@ ") {
		return h, false
	}
	return h, true
}

func (h hostPattern) String() string {
	s := h.name
	if h.wild {
		s = "*." + s
	}
	if h.port != 0 {
		return net.JoinHostPort(s, strconv.Itoa(h.port))
	}
	return s
}

// ports are the ports the pattern holds on.
func (h hostPattern) ports() []int {
	if h.port == 0 {
		return []int{443, 80}
	}
	return []int{h.port}
}

// matches reports whether the name n is one of h's names.
func (h hostPattern) matches(n string) bool {
	return n == h.name || h.wild && strings.HasSuffix(n, "."+h.name)
}

// meet is the hosts both h and o name, as a pattern; false when none.
func (h hostPattern) meet(o hostPattern) (hostPattern, bool) {
	var out hostPattern
	switch {
	case h.port == o.port:
		out.port = h.port
	case h.port == 0 && slices.Contains(h.ports(), o.port):
		out.port = o.port
	case o.port == 0 && slices.Contains(o.ports(), h.port):
		out.port = h.port
	default:
		return out, false
	}
	switch {
	case h.wild && o.wild:
		out.wild = true
		out.name = h.name
		if len(o.name) > len(h.name) {
			out.name = o.name
		}
		if !h.matches(out.name) || !o.matches(out.name) {
			return out, false
		}
	case h.wild:
		out.name = o.name
	default:
		out.name = h.name
	}
	return out, h.matches(out.name) && o.matches(out.name)
}

// covers reports whether every host and port of o is one of h's.
func (h hostPattern) covers(o hostPattern) bool {
	for _, p := range o.ports() {
		if !slices.Contains(h.ports(), p) {
			return false
		}
	}
	if o.wild && !h.wild {
		return false
	}
	return h.matches(o.name)
}

// ruleWithin says what r allows that none of owner does ("" when
// nothing): each of its methods (any, when it names none) with each of
// its paths (any, when none) must be allowed by one owner rule.
func ruleWithin(r backends.HTTPRule, owner []backends.HTTPRule) string {
	methods := r.Methods
	if len(methods) == 0 {
		methods = []string{""} // any method
	}
	paths := r.Paths
	if len(paths) == 0 {
		paths = []string{""} // any path: the prefix ""
	}
	for _, method := range methods {
		for _, path := range paths {
			ok := slices.ContainsFunc(owner, func(o backends.HTTPRule) bool {
				return (len(o.Methods) == 0 || method != "" && slices.Contains(o.Methods, method)) && pathWithin(path, o.Paths)
			})
			if !ok {
				what, where := method, path
				if what == "" {
					what = "any method"
				}
				if where == "" {
					where = "any path"
				}
				return fmt.Sprintf("it would allow %s on %s", what, where)
			}
		}
	}
	return ""
}

// pathWithin reports whether every path that p (a prefix, or a glob)
// allows is allowed by one of paths (none: any). A prefix allows what
// starts with it; a glob is taken as what starts with its part before
// the first wildcard, except where a glob of the owner's is the same.
func pathWithin(p string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	lit := p
	if i := strings.IndexAny(p, "*?"); i >= 0 {
		lit = p[:i]
	}
	for _, q := range paths {
		switch {
		case q == p:
			return true
		case strings.HasSuffix(q, "/**") && !strings.ContainsAny(strings.TrimSuffix(q, "/**"), "*?"):
			if strings.HasPrefix(lit, strings.TrimSuffix(q, "**")) {
				return true
			}
		case !strings.ContainsAny(q, "*?") && strings.HasPrefix(lit, q):
			return true
		}
	}
	return false
}
