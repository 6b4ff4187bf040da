package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// fakeClock is a clock the test moves. The scheduler's loop arms one timer
// at a time; advanceTo walks from timer to timer, so every wake-up the
// real clock would cause happens, in order.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan struct{}
}

type fakeTimer struct {
	at      time.Time
	c       chan time.Time
	stopped bool
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t, armed: make(chan struct{}, 1)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Timer(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ft := &fakeTimer{at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		ft.c <- c.now
		ft.stopped = true
	} else {
		c.timers = append(c.timers, ft)
		select {
		case c.armed <- struct{}{}:
		default:
		}
	}
	return ft.c, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !ft.stopped
		ft.stopped = true
		return was
	}
}

// pending is the earliest live timer, or nil.
func (c *fakeClock) pending() *fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := c.timers[:0]
	for _, ft := range c.timers {
		if !ft.stopped {
			live = append(live, ft)
		}
	}
	c.timers = live
	sort.Slice(live, func(i, j int) bool { return live[i].at.Before(live[j].at) })
	if len(live) == 0 {
		return nil
	}
	return live[0]
}

// waitIdle waits until the scheduler's loop waits on a timer.
func (c *fakeClock) waitIdle(t *testing.T) *fakeTimer {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ft := c.pending(); ft != nil {
			return ft
		}
		select {
		case <-c.armed:
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the scheduler's loop armed no timer within 10 s")
		}
	}
}

// advanceTo moves the clock to to, firing each timer due on the way once
// the loop has armed it.
func (c *fakeClock) advanceTo(t *testing.T, to time.Time) {
	t.Helper()
	for {
		ft := c.waitIdle(t)
		c.mu.Lock()
		if ft.at.After(to) {
			c.now = to
			c.mu.Unlock()
			return
		}
		c.now = ft.at
		ft.stopped = true
		ft.c <- ft.at
		c.mu.Unlock()
	}
}

// testEngine is an engine over root with bs and the direct backend.
func testEngine(t *testing.T, root string, bs ...backends.Backend) *app.Engine {
	t.Helper()
	e, err := app.New(app.Options{
		DataDir: filepath.Join(root, "data"), ConfigDir: filepath.Join(root, "config"), RuntimeDir: filepath.Join(root, "run"),
		HomeDir: filepath.Join(root, "home"), Backends: append(bs, direct.New()), EUID: os.Geteuid(),
		Forwarder: netfwdtest.Path(t), // every bwrap run needs it (the Unix socket guard)
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func testRoot(t *testing.T) string { return testutil.SandboxDir(t, "senclaw-sch-") }

// started is a scheduler on e with clock, started, stopped at the end.
func started(t *testing.T, e *app.Engine, clock Clock) *Scheduler {
	t.Helper()
	s, err := New(Options{Engine: e, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())
	t.Cleanup(s.Stop)
	return s
}

func setPolicy(t *testing.T, e *app.Engine, f func(p *app.ExecPolicy)) {
	t.Helper()
	p := e.Policy()
	f(&p)
	if _, err := e.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, s *Scheduler, spec Spec) *View {
	t.Helper()
	v, _, err := s.Create(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// history waits until the schedule's history has n entries that are not
// "running" and returns them.
func history(t *testing.T, s *Scheduler, id string, n int) []Firing {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, err := s.History(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		var done []Firing
		for _, f := range h {
			if f.Outcome != OutcomeRunning {
				done = append(done, f)
			}
		}
		if len(done) >= n {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatalf("history of %s has %d finished entries, want %d: %+v", id, len(done), n, h)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func bwrapBackend(binary string) backends.Backend {
	var user *backends.Credential
	if os.Geteuid() == 0 {
		user = &backends.Credential{UID: 65534, GID: 65534}
	}
	return bwrap.New(bwrap.Options{Binary: binary, SandboxUser: user})
}

func ptr[T any](v T) *T { return &v }
