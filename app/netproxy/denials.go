package netproxy

import "slices"

// recentKept is how many distinct refused hosts are kept per sandbox.
const recentKept = 12

type denials struct {
	count  int
	recent []string
	// allowed counts the connections let through.
	allowed int
}

// Kinds of refusal.
const (
	// KindConnect is a connection refused by the port, domain or
	// address rules.
	KindConnect = "connect"
	// KindHTTP is a request refused by the HTTP rules of its host.
	KindHTTP = "http"
	// KindSecret is a request that carried a secret's placeholder where
	// it may not go (to a host not its own: an exfiltration attempt).
	KindSecret = "secret"
)

// Refusal is what the proxy refused a sandbox, as the sandbox's run
// records it: what, the rule that refused it, and how to allow it.
type Refusal struct {
	Kind   string
	Host   string
	Port   int
	Method string
	Path   string
	// Rule says what refused it, in words.
	Rule string
	// Allow says how to allow it; "" when nothing can (the engine's own
	// API, this machine's private addresses).
	Allow string
}

// refuse counts a refusal and tells OnRefused.
func (p *Proxy) refuse(id string, r Refusal) {
	p.count(id, r.Host, r.Rule)
	if p.opts.OnRefused != nil {
		p.opts.OnRefused(id, r)
	}
}

func (p *Proxy) recordDenial(id, host, rule string) {
	p.refuse(id, Refusal{Kind: KindConnect, Host: host, Rule: rule})
}

func (p *Proxy) count(id, host, rule string) {
	p.mu.Lock()
	d := p.denials[id]
	if d == nil {
		d = &denials{}
		p.denials[id] = d
	}
	d.count++
	if i := slices.Index(d.recent, host); i >= 0 {
		d.recent = slices.Delete(d.recent, i, i+1)
	}
	d.recent = append(d.recent, host)
	if len(d.recent) > recentKept {
		d.recent = d.recent[len(d.recent)-recentKept:]
	}
	p.mu.Unlock()
	p.log.Debug("A sandbox connection was refused.", "sandbox", id, "host", host, "rule", rule)
}

// RefusedBefore counts a connection that was closed before it reached
// the proxy (at a Landlock run's door to it, a connection from outside
// the run) as one of the sandbox's refusals: from is kept among its
// recent refused hosts, marked as the door's.
func (p *Proxy) RefusedBefore(id, from, why string) { p.recordDenial(id, "door: "+from, why) }

func (p *Proxy) recordAllowed(id string) {
	p.mu.Lock()
	d := p.denials[id]
	if d == nil {
		d = &denials{}
		p.denials[id] = d
	}
	d.allowed++
	p.mu.Unlock()
}

// Allowed returns how many connections of the sandbox were let through
// since the engine started.
func (p *Proxy) Allowed(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.denials[id]; d != nil {
		return d.allowed
	}
	return 0
}

// Denials returns how many connections of the sandbox were refused since
// the engine started, and the last distinct refused hosts, newest last.
func (p *Proxy) Denials(id string) (int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.denials[id]
	if d == nil {
		return 0, []string{}
	}
	return d.count, append([]string{}, d.recent...)
}

// Forget drops a deleted sandbox's counters and its connections kept to
// the hosts the proxy looks into.
func (p *Proxy) Forget(id string) {
	p.mu.Lock()
	delete(p.denials, id)
	p.mu.Unlock()
	p.upstreams.forget(id)
}
