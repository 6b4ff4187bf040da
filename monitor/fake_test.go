package monitor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// fakeLister is a host process table that tests edit between samples.
type fakeLister struct {
	mu      sync.Mutex
	procs   map[int]ProcInfo
	asked   []int // pids passed to the last Details call
	scanErr error
}

func newFakeLister() *fakeLister {
	return &fakeLister{procs: map[int]ProcInfo{}}
}

// set adds or replaces a process.
func (f *fakeLister) set(pid, ppid int, created time.Time, cpu float64, rss uint64, cmd string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procs[pid] = ProcInfo{
		ProcRef:    ProcRef{Pid: pid, PPid: ppid, Pgid: pid, CreateTime: created},
		Command:    cmd,
		CPUSeconds: cpu,
		RSSBytes:   rss,
	}
}

// setCPU changes a process's CPU time.
func (f *fakeLister) setCPU(pid int, cpu float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.procs[pid]
	p.CPUSeconds = cpu
	f.procs[pid] = p
}

func (f *fakeLister) remove(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.procs, pid)
}

func (f *fakeLister) Scan(context.Context) ([]ProcRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.scanErr != nil {
		return nil, f.scanErr
	}
	var refs []ProcRef
	for _, p := range f.procs {
		refs = append(refs, p.ProcRef)
	}
	return refs, nil
}

func (f *fakeLister) Details(_ context.Context, refs []ProcRef) ([]ProcInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = f.asked[:0]
	var out []ProcInfo
	for _, r := range refs {
		f.asked = append(f.asked, r.Pid)
		if p, ok := f.procs[r.Pid]; ok {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeLister) lastAsked() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(slices.Values(f.asked))
}

var errScan = errors.New("scan failed")

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixedRoots returns a Roots func over a map the test may change.
type fixedRoots struct {
	mu sync.Mutex
	m  map[string][]int
}

func (r *fixedRoots) Roots() map[string][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]int, len(r.m))
	for k, v := range r.m {
		out[k] = slices.Clone(v)
	}
	return out
}

func (r *fixedRoots) set(id string, pids ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pids == nil {
		delete(r.m, id)
		return
	}
	r.m[id] = pids
}
