package app

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Prober is anything that can report a Capability: every backend, and
// facilities that are not backends themselves (Landlock, seccomp).
type Prober interface {
	Name() string
	Probe(ctx context.Context) backends.Capability
}

// Overall states.
const (
	Isolated = "isolated"
	Degraded = "degraded"
)

// prober caches probe results per backend so that a run only waits for the
// probe of the backend it uses, and a slow probe is not repeated per run.
type prober struct {
	backends []backends.Backend
	extras   []Prober
	ttl      time.Duration
	now      func() time.Time

	mu    sync.Mutex
	cache map[string]*probeEntry
}

type probeEntry struct {
	mu  sync.Mutex // held while probing: one probe per backend at a time
	cap backends.Capability
	at  time.Time
	ok  bool
	// refreshing: a probe of a healthy backend whose result expired runs
	// in the background.
	refreshing bool
	// last is cap and at as of the last probe, read without mu: a run
	// whose answer is fresh does not wait for a probe going on (an
	// engine's watcher probes it every few seconds, over its link).
	last atomic.Pointer[probeResult]
}

type probeResult struct {
	cap backends.Capability
	at  time.Time
}

// set keeps a probe's answer; mu is held.
func (en *probeEntry) set(c backends.Capability, at time.Time) {
	en.cap, en.at, en.ok = c, at, true
	en.last.Store(&probeResult{cap: c, at: at})
}

// unusableTTL is how long a probe that found a backend unusable is reused.
const unusableTTL = 3 * time.Second

// probeTimeout bounds one probe; backends also honour it themselves.
const probeTimeout = 5 * time.Second

func newProber(bs []backends.Backend, ttl time.Duration, now func() time.Time) *prober {
	if ttl == 0 {
		ttl = 20 * time.Second
	}
	return &prober{backends: bs, ttl: ttl, now: now, cache: map[string]*probeEntry{}}
}

func (p *prober) entry(name string) *probeEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	en := p.cache[name]
	if en == nil {
		en = &probeEntry{}
		p.cache[name] = en
	}
	return en
}

// probe returns pr's capability, probing when the cached one is stale.
func (p *prober) probe(ctx context.Context, pr Prober, refresh bool) backends.Capability {
	en := p.entry(pr.Name())
	if r := en.last.Load(); r != nil && !refresh && p.now().Sub(r.at) < p.ttlOf(r.cap) {
		return r.cap
	}
	en.mu.Lock()
	defer en.mu.Unlock()
	ttl := p.ttlOf(en.cap)
	if en.ok && !refresh && p.now().Sub(en.at) < ttl {
		return en.cap
	}
	if en.ok && !refresh && en.cap.Usable() {
		// Healthy when last asked: the run goes on with that answer
		// while the probe runs again beside it, off the run's path (a
		// trial sandbox costs as much as the run). This weakens nothing:
		// a backend that broke since fails to start the run, which is
		// then refused, never moved to weaker isolation.
		if !en.refreshing {
			en.refreshing = true
			go p.refreshInBackground(pr, en)
		}
		return en.cap
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c := pr.Probe(ctx)
	c.Backend = pr.Name()
	en.set(c, p.now())
	return en.cap
}

// ttlOf is how long c is reused: a backend that is down is asked again
// soon, so that a daemon just started is usable within seconds.
func (p *prober) ttlOf(c backends.Capability) time.Duration {
	if !c.Usable() {
		return min(p.ttl, unusableTTL)
	}
	return p.ttl
}

// refreshInBackground probes pr again and keeps the answer.
func (p *prober) refreshInBackground(pr Prober, en *probeEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	c := pr.Probe(ctx)
	c.Backend = pr.Name()
	en.mu.Lock()
	en.set(c, p.now())
	en.refreshing = false
	en.mu.Unlock()
}

// forget drops the cached probe of name: the next look probes again.
func (p *prober) forget(name string) {
	p.mu.Lock()
	delete(p.cache, name)
	p.mu.Unlock()
}

// cached is the last probe of name, without probing.
func (p *prober) cached(name string) (backends.Capability, bool) {
	p.mu.Lock()
	en := p.cache[name]
	p.mu.Unlock()
	if en == nil {
		return backends.Capability{}, false
	}
	r := en.last.Load()
	if r == nil {
		return backends.Capability{}, false
	}
	return r.cap, true
}

// find returns the named backend.
func (p *prober) find(name string) backends.Backend {
	for _, b := range p.backends {
		if b.Name() == name {
			return b
		}
	}
	return nil
}

// best returns the first healthy isolating backend in preference order,
// probing lazily: a later backend is only probed when the earlier ones are
// not healthy. The capabilities seen on the way explain a refusal.
func (p *prober) best(ctx context.Context) (backends.Backend, []backends.Capability) {
	var seen []backends.Capability
	for _, b := range p.backends {
		c := p.probe(ctx, b, false)
		seen = append(seen, c)
		if c.Isolates && c.Usable() {
			return b, seen
		}
	}
	return nil, seen
}

func (p *prober) all(ctx context.Context, refresh bool) Capabilities {
	caps := Capabilities{OS: runtime.GOOS, State: Degraded}
	var wg sync.WaitGroup
	caps.Backends = make([]backends.Capability, len(p.backends))
	for i, b := range p.backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			caps.Backends[i] = p.probe(ctx, b, refresh)
		}()
	}
	caps.Facilities = make([]backends.Capability, len(p.extras))
	for i, x := range p.extras {
		wg.Add(1)
		go func() {
			defer wg.Done()
			caps.Facilities[i] = p.probe(ctx, x, refresh)
		}()
	}
	wg.Wait()
	for _, c := range caps.Backends {
		if c.Isolates && c.Usable() {
			caps.State = Isolated
			caps.Recommended = c.Backend
			break
		}
	}
	caps.Summary = summarize(caps)
	return caps
}

func summarize(c Capabilities) string {
	if c.State == Isolated {
		return "Code runs isolated with " + c.Recommended + "."
	}
	var why []string
	for _, b := range c.Backends {
		if b.Isolates {
			why = append(why, b.Backend+": "+b.Reason)
		}
	}
	s := "Degraded: no isolation is available on this machine, so code could only run with no barrier at all; sandboxed runs are refused."
	if len(why) > 0 {
		s += " " + strings.Join(why, "; ")
	}
	return s
}

// ProbeFunc adapts a probe function to a Prober.
func ProbeFunc(name string, fn func(ctx context.Context) backends.Capability) Prober {
	return probeFunc{name, fn}
}

type probeFunc struct {
	name string
	fn   func(ctx context.Context) backends.Capability
}

func (p probeFunc) Name() string                                  { return p.name }
func (p probeFunc) Probe(ctx context.Context) backends.Capability { return p.fn(ctx) }
