package policyfile

import (
	"fmt"
	"path/filepath"
	"slices"
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
	// HTTPHosts are the hosts (lower case) whose HTTP rules the
	// project's file decided: its rules replace any other for them.
	HTTPHosts map[string]bool `json:"-"`
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
	return Effective{File: m.eff, Decided: m.from, Values: m.out, Notes: append([]string{}, m.notes...), HTTPHosts: m.httpHosts}
}

type merger struct {
	base, project Layer
	eff           File
	from          map[string]bool // keys the project decided
	notes         []string
	out           []Value
	httpHosts     map[string]bool
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

// narrowHTTP takes the project's HTTP rules. A rule for a host the
// owner's rules do not name limits that host further. A rule for a host
// the owner's rules name is taken only when it allows nothing they do
// not (every method and path of it within one of the owner's rules for
// the host); then the project's rules for that host replace the owner's.
// Any other is ignored, and the owner's rules for its host hold.
func (m *merger) narrowHTTP(rules []backends.HTTPRule) {
	ownerFor := func(host string) []backends.HTTPRule {
		var out []backends.HTTPRule
		for _, o := range m.base.File.HTTPRules {
			if strings.EqualFold(o.Host, host) {
				out = append(out, o)
			}
		}
		return out
	}
	replaced := map[string]bool{}
	for i, r := range rules {
		owner := ownerFor(r.Host)
		if len(owner) > 0 {
			if why := ruleWithin(r, owner); why != "" {
				m.ignore(fmt.Sprintf("httpRules[%d]", i), r.Host, why+", which the owner's rules for this host do not allow; they hold")
				continue
			}
			if key := strings.ToLower(r.Host); !replaced[key] {
				replaced[key] = true
				m.eff.HTTPRules = slices.DeleteFunc(m.eff.HTTPRules, func(o backends.HTTPRule) bool { return strings.EqualFold(o.Host, r.Host) })
			}
		}
		m.eff.HTTPRules = append(m.eff.HTTPRules, r)
		m.took("httpRules")
		if m.httpHosts == nil {
			m.httpHosts = map[string]bool{}
		}
		m.httpHosts[strings.ToLower(r.Host)] = true
	}
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
