package monitor

import (
	"testing"
	"time"
)

func TestHistoryBoundAndOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t, 3)
	r.lister.set(100, 1, r.clock.Now().Add(-time.Minute), 0, 0, "x")
	r.roots.set("a", 100)
	for i := range 5 {
		r.lister.setCPU(100, float64(i)*0.1*float64(i+1)/2) // +0.1*i per second
		r.sample(t)
		r.clock.advance(time.Second)
	}
	hist := r.s.History("a")
	if len(hist) != 3 {
		t.Fatalf("history has %d samples, want 3", len(hist))
	}
	for i, want := range []float64{20, 30, 40} {
		if !near(hist[i].CPUPercent, want) {
			t.Errorf("sample %d: CPU %v, want %v (oldest first)", i, hist[i].CPUPercent, want)
		}
		if i > 0 && !hist[i].At.After(hist[i-1].At) {
			t.Errorf("sample %d at %v is not after sample %d", i, hist[i].At, i-1)
		}
	}
	// The returned slice is a copy.
	hist[0].CPUPercent = -1
	if r.s.History("a")[0].CPUPercent == -1 {
		t.Error("History returned the internal buffer")
	}
}

func TestHistoryKeptUntilForget(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.lister.set(100, 1, r.clock.Now(), 0, 4096, "x")
	r.roots.set("a", 100)
	r.sample(t)
	r.clock.advance(time.Second)
	r.sample(t)

	// The processes exit while the sandbox is still monitored: zero samples.
	r.lister.remove(100)
	r.clock.advance(time.Second)
	r.sample(t)
	if snap := r.s.Snapshot("a"); snap.Count != 0 || snap.RSSBytes != 0 {
		t.Errorf("after exit: %+v, want empty", snap)
	}
	if n := len(r.s.History("a")); n != 3 {
		t.Errorf("history has %d samples, want 3", n)
	}

	// The engine stops naming it: the history stays as it was.
	r.roots.set("a")
	r.clock.advance(time.Second)
	r.sample(t)
	if n := len(r.s.History("a")); n != 3 {
		t.Errorf("history of an unmonitored sandbox has %d samples, want 3", n)
	}
	if snap := r.s.Snapshot("a"); snap.Count != 0 || !snap.SampledAt.Equal(r.clock.Now()) {
		t.Errorf("unmonitored sandbox snapshot %+v, want empty at %v", snap, r.clock.Now())
	}

	r.s.Forget("a")
	if h := r.s.History("a"); h != nil {
		t.Errorf("after Forget: history %v, want nil", h)
	}
	if snap := r.s.Snapshot("a"); !snap.SampledAt.IsZero() || snap.SandboxID != "a" {
		t.Errorf("after Forget: snapshot %+v, want zero", snap)
	}
}

// The machinery Options.Overhead names stays in the processes but counts
// in neither the totals nor the history: both measure the same thing.
func TestOverheadLeftOutOfTotalsAndHistory(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.s = New(Options{Lister: r.lister, Now: r.clock.Now, Roots: r.roots.Roots, Overhead: func(p Proc) bool { return p.Command == "bwrap" }})
	start := r.clock.Now().Add(-time.Minute)
	r.lister.set(100, 1, start, 0, 5<<20, "bwrap")
	r.lister.set(101, 100, start, 0, 7<<20, "python3 app.py")
	r.roots.set("a", 100)
	r.sample(t)
	snap := r.s.Snapshot("a")
	if snap.Count != 2 || snap.RSSBytes != 7<<20 {
		t.Fatalf("snapshot %+v: want both processes, the total of python3 only", snap)
	}
	if h := r.s.History("a"); len(h) != 1 || h[0].RSSBytes != snap.RSSBytes {
		t.Fatalf("history %+v, want the snapshot's total %d", h, snap.RSSBytes)
	}
}
