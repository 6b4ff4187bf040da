package tracer

import (
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// A run that floods the trace (distinct reads, a marker repeated, huge
// paths) costs the engine a bounded collector: max events, the reads among
// them, one copy of each marker, clipped text; the rest is counted.
func TestCollectorIsBoundedUnderAFlood(t *testing.T) {
	t.Parallel()
	const max = 100
	c := NewCollector(max, false)
	for i := range 200_000 {
		c.Add(backends.TraceEvent{Pid: 7, Kind: KindRead, Target: "/w/f" + strconv.Itoa(i), Source: SourceStrace})
	}
	for range 50_000 {
		c.Add(backends.TraceEvent{Pid: 7, Kind: KindIncomplete, Target: "io_uring", Detail: "an io_uring ring was set up", Source: SourceStrace})
	}
	for i := range 1_000 {
		c.Add(backends.TraceEvent{Pid: 7, Kind: KindIncomplete, Target: "x" + strconv.Itoa(i), Source: SourceStrace})
	}
	huge := strings.Repeat("é", 1<<20)
	c.Add(backends.TraceEvent{Pid: 8, Kind: KindWrite, Target: huge, Detail: huge, Source: SourceHooks})
	if len(c.reads) > max {
		t.Errorf("the collector remembers %d reads, more than the %d events it keeps", len(c.reads), max)
	}
	evs := c.Events()
	if len(evs) > max+maxMarkers+1 {
		t.Fatalf("%d events kept (bound %d)", len(evs), max+maxMarkers+1)
	}
	markers := 0
	for _, ev := range evs {
		if strings.HasPrefix(ev.Kind, "trace.") {
			markers++
		}
		if len(ev.Target) > MaxTargetBytes+len("…") || len(ev.Detail) > MaxDetailBytes+len("…") {
			t.Errorf("an event of %d+%d bytes was kept", len(ev.Target), len(ev.Detail))
		}
	}
	last := evs[len(evs)-1]
	if markers > maxMarkers+1 || last.Kind != KindTruncated || !strings.Contains(last.Detail, "dropped") {
		t.Errorf("%d markers; last event %+v", markers, last)
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"aé", 2, "a…"}, // never half a rune
		{"", 0, ""},
	} {
		if got := Clip(tc.in, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
