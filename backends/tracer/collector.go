package tracer

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/senclaw/sandbox/backends"
)

// MaxEventsPerRun bounds the events kept of one run; past it, events are
// counted in one trace.truncated marker.
const MaxEventsPerRun = 5000

// Bounds of one event's text, and of the distinct markers a run keeps:
// the traced code chooses paths, argv and how often it does a thing the
// trace marks, and the engine keeps what it is told in memory.
const (
	MaxTargetBytes = 4096
	MaxDetailBytes = 1024
	maxMarkers     = 64
)

// Collector gathers one run's events from every source, folds the noise
// and bounds the volume. It is safe for concurrent use; Spec.Trace can be
// its Add.
type Collector struct {
	mu      sync.Mutex
	max     int
	all     bool
	extra   []string
	events  []backends.TraceEvent
	dropped int
	folds   map[string]*backends.TraceEvent
	counts  map[string]int
	reads   map[string]bool
	markers map[string]bool
	closed  bool
}

// NewCollector returns a collector that keeps up to max events. Unless all
// is set, reads of the system roots (FoldRoot) and of the extra trees (the
// interpreter hooks' own files) are folded into one summary event per
// root, writes to /dev and /proc likewise, and a process reading the same
// file again is not repeated.
func NewCollector(max int, all bool, extra ...string) *Collector {
	return &Collector{max: max, all: all, extra: extra, folds: map[string]*backends.TraceEvent{},
		counts: map[string]int{}, reads: map[string]bool{}, markers: map[string]bool{}}
}

// Add takes one event, its target and detail clipped to MaxTargetBytes
// and MaxDetailBytes. Events after Events was called are ignored. The
// memory a collector holds is bounded whatever it is given: max events,
// the distinct reads among them, the fold summaries (one per root) and
// up to maxMarkers distinct markers; the rest is only counted.
func (c *Collector) Add(ev backends.TraceEvent) {
	ev.Target, ev.Detail = Clip(ev.Target, MaxTargetBytes), Clip(ev.Detail, MaxDetailBytes)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if strings.HasPrefix(ev.Kind, "trace.") {
		// Markers say what the trace lacks: they are not dropped with
		// the events, and a repeated one is kept once.
		key := ev.Kind + "\x00" + ev.Target + "\x00" + ev.Detail
		switch {
		case c.markers[key]:
		case len(c.markers) >= maxMarkers:
			c.dropped++
		default:
			c.markers[key] = true
			c.events = append(c.events, ev)
		}
		return
	}
	if !c.all {
		if root, ok := c.foldRoot(ev); ok {
			key := ev.Kind + " " + root + " " + ev.Source
			if c.folds[key] == nil {
				f := ev
				f.Target = root + "/**"
				c.folds[key] = &f
			}
			c.counts[key]++
			return
		}
		if ev.Kind == KindRead {
			key := fmt.Sprint(ev.Pid, ev.Source, ev.Target)
			if c.reads[key] {
				return
			}
			if len(c.events)-len(c.markers) < c.max {
				c.reads[key] = true // only reads that are kept: the set stays bounded
			}
		}
	}
	if len(c.events)-len(c.markers) >= c.max {
		c.dropped++
		return
	}
	c.events = append(c.events, ev)
}

// Clip cuts s to at most n bytes, at a rune boundary, with "…" when it
// was cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// foldRoot says which summary ev is folded into, if any.
func (c *Collector) foldRoot(ev backends.TraceEvent) (string, bool) {
	switch ev.Kind {
	case KindRead:
		for _, x := range c.extra {
			if ev.Target == x || strings.HasPrefix(ev.Target, x+"/") {
				return x, true
			}
		}
		return FoldRoot(ev.Target)
	case KindWrite:
		for _, r := range []string{"/dev", "/proc"} {
			if strings.HasPrefix(ev.Target, r+"/") && ev.Source != SourceDiff {
				return r, true
			}
		}
	}
	return "", false
}

// Events ends the collection and returns the events in time order, the
// fold summaries with them, and a trace.truncated marker last when
// events were dropped.
func (c *Collector) Events() []backends.TraceEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	out := slices.Clone(c.events)
	for _, key := range slices.Sorted(mapKeys(c.folds)) {
		f := *c.folds[key]
		verb := "reads"
		if f.Kind == KindWrite {
			verb = "writes"
		}
		f.Detail = fmt.Sprintf("%d %s folded", c.counts[key], verb)
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b backends.TraceEvent) int { return int(a.TimeMs - b.TimeMs) })
	if c.dropped > 0 {
		last := int64(0)
		if len(out) > 0 {
			last = out[len(out)-1].TimeMs
		}
		out = append(out, backends.TraceEvent{TimeMs: last, Kind: KindTruncated, Target: "events",
			Detail: fmt.Sprintf("%d events dropped: a run keeps at most %d", c.dropped, c.max), Source: SourceEngine})
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
