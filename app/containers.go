package app

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker"
)

// startBackends runs the backends' start-up and background work: what a
// container backend keeps for sandboxes that no longer exist is removed,
// the rest adopted (no orphans after a crash), and idle containers are
// pruned.
func (e *Engine) startBackends(ctx context.Context) {
	known := map[string]bool{}
	if all, err := e.List(); err == nil {
		for _, sb := range all {
			// A sandbox that got a new uid at this start has a container
			// whose processes still run as the old one (nobody, under the
			// shared-uid scheme): it goes, and the next run makes another.
			known[sb.ID] = !e.uids.moved[sb.ID]
		}
	}
	var reconciling sync.WaitGroup
	defer func() {
		go func() {
			reconciling.Wait()
			close(e.reconciled)
		}()
	}()
	for _, b := range e.opts.Backends {
		if s, ok := b.(sweeper); ok {
			go s.Sweep()
		}
		if p, ok := b.(backends.Persistent); ok {
			reconciling.Add(1)
			go func() {
				defer reconciling.Done()
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				if c := e.probes.probe(rctx, b, false); !c.Usable() {
					return
				}
				if err := p.Reconcile(rctx, func(id string) bool { return known[id] }); err != nil {
					e.log.Warn("Reconciling a backend failed.", "backend", b.Name(), "err", err)
				}
			}()
		}
		if p, ok := b.(docker.Pruner); ok {
			go p.RunPruner(ctx)
		}
	}
	e.startEngines(ctx)
}

// sweeper is a backend that can clear what an earlier engine left behind
// when it died (bwrap's empty run cgroups).
type sweeper interface{ Sweep() int }

// closeBackends releases what backends hold (the warm container pool).
func (e *Engine) closeBackends() {
	for _, b := range e.opts.Backends {
		if c, ok := b.(io.Closer); ok {
			if err := c.Close(); err != nil {
				e.log.Warn("Closing a backend failed.", "backend", b.Name(), "err", err)
			}
		}
	}
}

// statusCache remembers what persistent backends said about each sandbox
// for a few seconds, so that a dashboard polling the list does not ask the
// daemon about every container every second.
type statusCache struct {
	mu  sync.Mutex
	m   map[string]statusEntry
	ttl time.Duration
}

type statusEntry struct {
	status string
	at     time.Time
}

// containerStatus is what the sandbox's backend keeps for it ("" for a
// backend that keeps nothing): running, stopped, none or needs recreate.
func (e *Engine) containerStatus(sb *Sandbox) string {
	p := e.persistent(sb)
	if p == nil {
		return ""
	}
	e.status.mu.Lock()
	if en, ok := e.status.m[sb.ID]; ok && e.now().Sub(en.at) < e.status.ttl {
		e.status.mu.Unlock()
		return en.status
	}
	e.status.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	spec, err := e.specFor(ctx, sb)
	status := ""
	if err == nil {
		status, err = p.SandboxStatus(ctx, spec)
	}
	if err != nil {
		status = "unknown: " + err.Error()
	}
	e.status.mu.Lock()
	e.status.m[sb.ID] = statusEntry{status, e.now()}
	e.status.mu.Unlock()
	return status
}

func (e *Engine) forgetStatus(id string) {
	e.status.mu.Lock()
	delete(e.status.m, id)
	e.status.mu.Unlock()
}
