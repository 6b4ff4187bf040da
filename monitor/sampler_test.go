package monitor

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// rig is a Sampler over a fake process table and clock.
type rig struct {
	lister *fakeLister
	clock  *fakeClock
	roots  *fixedRoots
	s      *Sampler
}

func newRig(t *testing.T, history int) *rig {
	t.Helper()
	r := &rig{lister: newFakeLister(), clock: newFakeClock(), roots: &fixedRoots{m: map[string][]int{}}}
	r.s = New(Options{Lister: r.lister, Now: r.clock.Now, History: history, Roots: r.roots.Roots})
	return r
}

func (r *rig) sample(t *testing.T) {
	t.Helper()
	if err := r.s.SampleOnce(); err != nil {
		t.Fatalf("SampleOnce: %v", err)
	}
}

// proc returns pid's entry in the sandbox's snapshot.
func (r *rig) proc(t *testing.T, id string, pid int) Proc {
	t.Helper()
	for _, p := range r.s.Snapshot(id).Processes {
		if p.Pid == pid {
			return p
		}
	}
	t.Fatalf("pid %d not in snapshot of %q: %+v", pid, id, r.s.Snapshot(id))
	return Proc{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestCPUPercentFromDeltas(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		cpuBefore float64
		cpuAfter  float64
		wall      time.Duration
		want      float64
	}{
		{"half_core", 10, 10.5, time.Second, 50},
		{"two_cores", 10, 12, time.Second, 200},
		{"slow_interval", 10, 10.3, 2 * time.Second, 15},
		{"idle", 10, 10, time.Second, 0},
		{"clock_stood_still", 10, 11, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, 0)
			start := r.clock.Now().Add(-time.Hour)
			r.lister.set(100, 1, start, tc.cpuBefore, 1<<20, "work")
			r.roots.set("a", 100)
			r.sample(t)
			if got := r.proc(t, "a", 100).CPUPercent; got != 0 {
				t.Errorf("first sight of an old process: CPUPercent = %v, want 0", got)
			}
			r.lister.setCPU(100, tc.cpuAfter)
			r.clock.advance(tc.wall)
			r.sample(t)
			p := r.proc(t, "a", 100)
			if !near(p.CPUPercent, tc.want) {
				t.Errorf("CPUPercent = %v, want %v", p.CPUPercent, tc.want)
			}
			if want := time.Hour + tc.wall; p.Elapsed != want {
				t.Errorf("Elapsed = %v, want %v", p.Elapsed, want)
			}
		})
	}
}

func TestPidReuseNoSpike(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		oldCPU float64
		newCPU float64
		want   float64 // the new process's own CPU over the window
	}{
		// Subtracting by pid would give 0.5-0.2 = 30%.
		{"new_has_more", 0.2, 0.5, 50},
		// Subtracting by pid would give a negative delta.
		{"new_has_less", 500, 0.1, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, 0)
			t0 := r.clock.Now()
			r.lister.set(100, 1, t0.Add(-time.Hour), 1, 0, "sh")
			r.lister.set(101, 100, t0.Add(-time.Hour), tc.oldCPU, 0, "old")
			r.roots.set("a", 100)
			r.sample(t)
			// 101 exits; a new process gets the same pid half a second later.
			r.lister.set(101, 100, t0.Add(500*time.Millisecond), tc.newCPU, 0, "new")
			r.clock.advance(time.Second)
			r.sample(t)
			p := r.proc(t, "a", 101)
			if p.Command != "new" || !near(p.CPUPercent, tc.want) {
				t.Errorf("reused pid: got %q at %v%%, want %q at %v%%", p.Command, p.CPUPercent, "new", tc.want)
			}
			// From now on the new process is measured by delta.
			r.lister.setCPU(101, tc.newCPU+0.25)
			r.clock.advance(time.Second)
			r.sample(t)
			if got := r.proc(t, "a", 101).CPUPercent; !near(got, 25) {
				t.Errorf("next sample: CPUPercent = %v, want 25", got)
			}
		})
	}
}

func TestTreeExpansion(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	old := r.clock.Now().Add(-time.Minute)
	r.lister.set(1, 0, old, 0, 0, "init")
	r.lister.set(100, 1, old, 0, 0, "bwrap a")
	r.lister.set(101, 100, old, 0, 0, "sh")
	r.lister.set(102, 101, old, 0, 0, "grandchild")
	r.lister.set(103, 102, old, 0, 0, "great-grandchild")
	r.lister.set(200, 1, old, 0, 0, "bwrap b")
	r.lister.set(201, 200, old, 0, 0, "b child")
	r.lister.set(300, 1, old, 0, 0, "unrelated")
	r.lister.set(301, 300, old, 0, 0, "unrelated child")
	r.roots.set("a", 100)
	r.roots.set("b", 200)
	r.roots.set("init", 1)     // would claim the whole host: ignored
	r.roots.set("gone", 12345) // root exited
	r.sample(t)

	pids := func(id string) []int {
		var out []int
		for _, p := range r.s.Snapshot(id).Processes {
			out = append(out, p.Pid)
		}
		return out
	}
	if got, want := pids("a"), []int{100, 101, 102, 103}; !slices.Equal(got, want) {
		t.Errorf("sandbox a: pids %v, want %v (parents before children)", got, want)
	}
	if got, want := pids("b"), []int{200, 201}; !slices.Equal(got, want) {
		t.Errorf("sandbox b: pids %v, want %v", got, want)
	}
	for _, id := range []string{"init", "gone"} {
		if snap := r.s.Snapshot(id); snap.Count != 0 || len(snap.Processes) != 0 {
			t.Errorf("sandbox %q: %d processes, want none", id, snap.Count)
		}
	}
	// Only the sandboxes' processes were expanded.
	if got, want := r.lister.lastAsked(), []int{100, 101, 102, 103, 200, 201}; !slices.Equal(got, want) {
		t.Errorf("details read for %v, want only %v", got, want)
	}
}

func TestTotals(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	old := r.clock.Now().Add(-time.Minute)
	r.lister.set(100, 1, old, 1, 1000, "root")
	r.lister.set(101, 100, old, 2, 2000, "a")
	r.lister.set(102, 100, old, 3, 3000, "b")
	r.roots.set("a", 100)
	r.sample(t)
	r.lister.setCPU(100, 1.1)
	r.lister.setCPU(101, 2.5)
	r.lister.setCPU(102, 4)
	r.clock.advance(time.Second)
	r.sample(t)
	snap := r.s.Snapshot("a")
	if snap.Count != 3 || snap.RSSBytes != 6000 || !near(snap.CPUPercent, 160) || !snap.SampledAt.Equal(r.clock.Now()) {
		t.Errorf("totals: count %d, rss %d, cpu %v, at %v; want 3, 6000, 160, %v",
			snap.Count, snap.RSSBytes, snap.CPUPercent, snap.SampledAt, r.clock.Now())
	}
	hist := r.s.History("a")
	if last := hist[len(hist)-1]; !near(last.CPUPercent, 160) || last.RSSBytes != 6000 {
		t.Errorf("history's last sample %+v, want the totals", last)
	}
}

func TestSampleErrorKeepsState(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.lister.set(100, 1, r.clock.Now(), 0, 1, "x")
	r.roots.set("a", 100)
	r.sample(t)
	before := r.s.Snapshot("a")
	r.lister.scanErr = errScan
	err := r.s.SampleOnce()
	if !errors.Is(err, errScan) || err.Error() != "listing processes: scan failed" {
		t.Errorf("SampleOnce error = %v, want wrapped scan error", err)
	}
	if after := r.s.Snapshot("a"); !after.SampledAt.Equal(before.SampledAt) || after.Count != 1 {
		t.Errorf("failed sample changed the snapshot: %+v", after)
	}
}

func TestSnapshotIsCopy(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.lister.set(100, 1, r.clock.Now(), 0, 1, "x")
	r.roots.set("a", 100)
	r.sample(t)
	r.s.Snapshot("a").Processes[0].Command = "changed"
	if got := r.s.Snapshot("a").Processes[0].Command; got != "x" {
		t.Errorf("Snapshot shares its slice: command now %q", got)
	}
}

func TestRunSamplesUntilCancel(t *testing.T) {
	t.Parallel()
	lister, roots := newFakeLister(), &fixedRoots{m: map[string][]int{"a": {100}}}
	lister.set(100, 1, time.Now(), 0, 1, "x")
	s := New(Options{Lister: lister, Interval: time.Millisecond, Roots: roots.Roots})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(s.History("a")) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("Run took no samples")
		}
		_ = s.Snapshot("a") // readers race with the sampler under -race
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
