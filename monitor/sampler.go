// Package monitor samples the processes of running sandboxes.
//
// Per sandbox it keeps a process list with CPU and memory, totals, and a
// bounded history for charts. It also answers whether a pid belongs to a
// sandbox, so that the engine can kill a sandbox's process without ever
// signalling a foreign one.
//
// A sandbox is identified to the monitor only by the host pids of its
// process-tree roots (for bubblewrap, the bwrap process); everything below
// them belongs to it.
package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Default values for Options fields left zero.
const (
	DefaultInterval = time.Second
	DefaultHistory  = 300
)

// Options configure a Sampler. Only Roots is required.
type Options struct {
	// Lister reads the process table; nil means NewHostLister().
	Lister Lister
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
	// Interval is the time between samples in Run; zero means
	// DefaultInterval.
	Interval time.Duration
	// History is how many samples are kept per sandbox; zero means
	// DefaultHistory.
	History int
	// Roots returns, per sandbox id, the host pids of its process-tree
	// roots. It is called once per sample and per Owns or Kill, possibly
	// from several goroutines at once, and never with a Sampler lock held,
	// so it may take the engine's own locks.
	Roots func() map[string][]int
	// Overhead reports a process that is the sandbox's machinery rather
	// than its work (the engine's launcher, its forwarder): it stays in
	// the snapshot's processes but counts in neither the totals nor the
	// history, so that both measure the same thing. nil counts all.
	Overhead func(Proc) bool
	// Logger receives sampling failures (once per change); nil discards.
	Logger *slog.Logger
}

// Sampler samples the process trees of sandboxes. It is safe for concurrent
// use.
type Sampler struct {
	lister   Lister
	now      func() time.Time
	interval time.Duration
	history  int
	roots    func() map[string][]int
	overhead func(Proc) bool
	log      *slog.Logger

	// sampling serializes samples, so each one computes CPU deltas against
	// the one before it. Readers never wait for it.
	sampling sync.Mutex

	mu        sync.Mutex
	prev      map[procKey]cpuMark // processes of the previous sample
	prevAt    time.Time
	sandboxes map[string]*sandboxState
}

// New returns a Sampler; call Run or SampleOnce to take samples.
func New(opts Options) *Sampler {
	s := &Sampler{
		lister:    opts.Lister,
		now:       opts.Now,
		interval:  opts.Interval,
		history:   opts.History,
		roots:     opts.Roots,
		overhead:  opts.Overhead,
		log:       opts.Logger,
		prev:      map[procKey]cpuMark{},
		sandboxes: map[string]*sandboxState{},
	}
	if s.lister == nil {
		s.lister = NewHostLister()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.interval <= 0 {
		s.interval = DefaultInterval
	}
	if s.history <= 0 {
		s.history = DefaultHistory
	}
	if s.roots == nil {
		s.roots = func() map[string][]int { return nil }
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Run samples at once and then every Interval until ctx ends. Failures are
// logged when they start and when they stop, not on every tick.
func (s *Sampler) Run(ctx context.Context) {
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	failing := false
	for {
		err := s.sample(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			s.log.Warn("Sampling sandbox processes failed.", "err", err)
			failing = true
		case err == nil && failing:
			s.log.Info("Sampling sandbox processes works again.")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// SampleOnce takes one sample of every sandbox that Roots names.
func (s *Sampler) SampleOnce() error {
	return s.sample(context.Background())
}

// sample lists the host's processes cheaply, expands the sandbox trees, reads
// details only for the processes in them, and records the result.
func (s *Sampler) sample(ctx context.Context) error {
	s.sampling.Lock()
	defer s.sampling.Unlock()

	roots := s.roots()
	refs, err := s.lister.Scan(ctx)
	if err != nil {
		return fmt.Errorf("listing processes: %w", err)
	}
	table := newProcessTable(refs)
	trees := make(map[string][]int, len(roots))
	var wanted []ProcRef
	picked := make(map[int]bool)
	for id, r := range roots {
		pids := table.descendants(r)
		trees[id] = pids
		for _, pid := range pids {
			if !picked[pid] {
				picked[pid] = true
				wanted = append(wanted, table.byPid[pid])
			}
		}
	}
	var infos []ProcInfo
	if len(wanted) > 0 {
		infos, err = s.lister.Details(ctx, wanted)
		if err != nil {
			return fmt.Errorf("reading process details: %w", err)
		}
	}
	now := s.now()

	s.mu.Lock()
	defer s.mu.Unlock()
	procs, next := s.measure(infos, now)
	for id, pids := range trees {
		st := s.sandboxes[id]
		if st == nil {
			st = &sandboxState{hist: newRing(s.history)}
			s.sandboxes[id] = st
		}
		st.snap = buildSnapshot(id, now, pids, procs, s.overhead)
		st.hist.add(Sample{At: now, CPUPercent: st.snap.CPUPercent, RSSBytes: st.snap.RSSBytes})
	}
	// Sandboxes no longer named by Roots have no processes to show; their
	// history stays until Forget.
	for id, st := range s.sandboxes {
		if _, ok := trees[id]; !ok {
			st.snap = Snapshot{SandboxID: id, SampledAt: now}
		}
	}
	s.prev, s.prevAt = next, now
	return nil
}
