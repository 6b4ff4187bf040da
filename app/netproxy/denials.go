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

func (p *Proxy) recordDenial(id, host, rule string) {
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
	if p.opts.OnDenied != nil {
		p.opts.OnDenied(id, host, rule)
	}
}

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

// Forget drops a deleted sandbox's counters.
func (p *Proxy) Forget(id string) {
	p.mu.Lock()
	delete(p.denials, id)
	p.mu.Unlock()
}
