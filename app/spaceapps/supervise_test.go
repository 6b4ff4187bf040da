package spaceapps

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/internal/testutil"
)

// fakeClock is a Clock whose time moves only when the test says.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	d  time.Duration
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), d, ch})
	return ch
}

// Advance moves time on by d and fires what is due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// waiting reports whether someone waits for exactly d.
func (c *fakeClock) waiting(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.waiters, func(w fakeWaiter) bool { return w.d == d })
}

// TestACrashingAppBacksOffAndGivesUp: a server that dies at once is
// restarted after 1, 2, 4 and 8 s (on the injected clock), gives up at
// the fifth failed start within five minutes with the last lines of its
// log, and a manual start resets it all. No test time is spent sleeping
// through the backoff.
func TestACrashingAppBacksOffAndGivesUp(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	f := newFixture(t, func(_ *app.Options, o *Options) { o.Clock = clock })
	ctx := context.Background()
	dir := writeApp(t, `{"id": "crash", "name": "Crash", "runtime": {"start": "echo boom from the app >&2; exit 3"}, "sandbox": {"enabled": true}}`, nil)
	f.register(t, dir, false)
	r, err := f.s.Start(ctx, "crash", true)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || !strings.Contains(r.Note, "exit code 3") {
		t.Fatalf("the first start: %+v", r)
	}
	for i, d := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		testutil.WaitFor(t, 10*time.Second, "backoff "+d.String(), func() bool { return clock.waiting(d) })
		v, _ := f.s.Get("crash")
		if v.State != StateBackoff || v.Launches != i+1 || v.NextAttemptAtMs != clock.Now().Add(d).UnixMilli() || !strings.Contains(v.StateText, "restarting in "+d.String()) {
			t.Fatalf("after failure %d: %+v", i+1, v)
		}
		clock.Advance(d)
	}
	testutil.WaitFor(t, 10*time.Second, "crash-looping", func() bool {
		v, _ := f.s.Get("crash")
		return v.State == StateCrashLooping
	})
	v, _ := f.s.Get("crash")
	if v.Launches != GiveUpStarts || !slices.ContainsFunc(v.LastLog, func(l string) bool { return strings.Contains(l, "boom from the app") }) || !strings.Contains(v.StateText, "gave up after 5 failed starts") {
		t.Fatalf("crash-looping %+v", v)
	}
	if got := f.attention.all(); !slices.Contains(got, "crash: crash-looping: Crash") {
		t.Errorf("attention %v", got)
	}
	time.Sleep(100 * time.Millisecond)
	clock.Advance(BackoffMax)
	if v, _ := f.s.Get("crash"); v.State != StateCrashLooping || v.Launches != GiveUpStarts {
		t.Fatalf("it was restarted after giving up: %+v", v)
	}
	// A manual start resets the count and starts again.
	_, err = f.s.Start(ctx, "crash", true)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the first backoff after a manual start", func() bool { return clock.waiting(time.Second) })
	if v, _ := f.s.Get("crash"); v.Launches != 1 || v.TotalLaunches != GiveUpStarts+1 {
		t.Fatalf("after a manual start: %+v", v)
	}
	// A manual start while backing off starts over at once.
	if _, err := f.s.Start(ctx, "crash", true); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "a new launch after a manual start during the backoff", func() bool {
		v, _ := f.s.Get("crash")
		return v.Launches == 1 && v.TotalLaunches == GiveUpStarts+2 && v.State == StateBackoff
	})
	if _, err := f.s.Stop(ctx, "crash"); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.s.Get("crash"); v.State != StateStopped || !v.StoppedByUser {
		t.Fatalf("stopped while backing off: %+v", v)
	}
}

// TestBackoffResetsAfterAMinuteHealthy: an app that crashes after a
// minute of health starts again after 1 s, not after a doubled delay, and
// that crash does not count towards giving up.
func TestBackoffResetsAfterAMinuteHealthy(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	f := newFixture(t, func(_ *app.Options, o *Options) { o.Clock = clock })
	dir := writeApp(t, probeManifest("flaky", `{"enabled": true}`), map[string]string{"probe.py": probeApp})
	f.register(t, dir, false)
	v := f.start(t, "flaky")
	// Crash soon after the start: the first backoff is 1 s.
	go poke(v.Port, "/exit?code=1")
	testutil.WaitFor(t, 10*time.Second, "the first backoff", func() bool { return clock.waiting(time.Second) })
	clock.Advance(time.Second)
	testutil.WaitFor(t, 20*time.Second, "the restart to be healthy", func() bool {
		v, _ := f.s.Get("flaky")
		return v.State == StateRunning
	})
	d, _ := f.s.Get("flaky")
	if d.Launches != 2 {
		t.Fatalf("after the restart %+v", d)
	}
	v = &d.AppView
	// Healthy for a minute (the probes come every 10 s), then a crash:
	// backoff 1 s again, not 2 s.
	for i := 0; i < 7; i++ {
		testutil.WaitFor(t, 10*time.Second, "the next probe's timer", func() bool { return clock.waiting(ProbeEvery) })
		clock.Advance(ProbeEvery)
	}
	go poke(v.Port, "/exit?code=1")
	testutil.WaitFor(t, 10*time.Second, "the reset backoff", func() bool {
		v, _ := f.s.Get("flaky")
		return v.State == StateBackoff
	})
	if !clock.waiting(time.Second) || clock.waiting(2*time.Second) {
		t.Fatal("the backoff did not reset to 1 s after a minute healthy")
	}
	if v, _ := f.s.Get("flaky"); !strings.Contains(v.StateText, "restarting in 1s") {
		t.Fatalf("state %+v", v)
	}
}

// TestRestartPolicies: never leaves a crashed app exited; on-failure does
// not restart a clean exit; always does.
func TestRestartPolicies(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	f := newFixture(t, func(_ *app.Options, o *Options) { o.Clock = clock })
	ctx := context.Background()
	cases := []struct {
		id, restart, start, state string
		restarts                  bool
	}{
		{"never", "never", "exit 4", StateFailed, false},
		{"clean", "on-failure", "exit 0", StateExited, false},
		{"always", "always", "exit 0", StateBackoff, true},
	}
	for _, c := range cases {
		dir := writeApp(t, `{"id": "`+c.id+`", "name": "`+c.id+`", "runtime": {"start": "`+c.start+`", "restart": "`+c.restart+`"}, "sandbox": {"enabled": true}}`, nil)
		f.register(t, dir, false)
		if _, err := f.s.Start(ctx, c.id, true); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, c.id+" to settle in "+c.state, func() bool {
			v, _ := f.s.Get(c.id)
			return v.State == c.state
		})
		if v, _ := f.s.Get(c.id); !strings.Contains(v.StateText, "restart policy "+c.restart) && !c.restarts {
			t.Errorf("%s: %q", c.id, v.StateText)
		}
	}
}

// poke asks the app for path and ignores the answer (the app may die
// before it answers).
func poke(port int, path string) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	if resp, err := c.Get("http://127.0.0.1:" + itoa(port) + path); err == nil {
		resp.Body.Close()
	}
}

// TestARestartIsNotAStop: the record of the launch a restart ended says
// "restarted by a person", and of the one a stop ended "stopped by a
// person", not a bare "stopped": the dashboard and `senclaw runs` tell a
// restart from a stop, and neither from a failure.
func TestARestartIsNotAStop(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	f := newFixture(t)
	ctx := context.Background()
	f.register(t, writeApp(t, probeManifest("restarty", `{"enabled": true}`), map[string]string{"probe.py": probeApp}), false)
	f.start(t, "restarty")
	if r, err := f.s.Restart(ctx, "restarty", true); err != nil || !r.OK {
		t.Fatalf("restart: %+v, %v", r, err)
	}
	if _, err := f.s.Stop(ctx, "restarty"); err != nil {
		t.Fatal(err)
	}
	page, err := f.e.RunsPage(sandboxID("restarty"), app.ListQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var killed []string
	for _, r := range page.Runs {
		killed = append(killed, r.Killed)
	}
	// Newest first: the stopped launch, then the restarted one.
	if want := []string{"stopped by a person", "restarted by a person"}; strings.Join(killed, "|") != strings.Join(want, "|") {
		t.Fatalf("the records' killed: %q, want %q", killed, want)
	}
}

// TestAPersonsStartWaitsForALaunchUnderWay: a person's start of an app
// whose launch is under way already (autostart's, at the engine's start)
// waits for that launch as for one of its own, and says the app runs,
// rather than answering at once that it is not running.
func TestAPersonsStartWaitsForALaunchUnderWay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := `{"id": "slow", "name": "Slow", "runtime": {"start": "sleep 1 && exec python3 probe.py", "port": 0, "stopTimeoutSec": 5}, "sandbox": {"enabled": true}}`
	f.register(t, writeApp(t, m, map[string]string{"probe.py": probeApp}), false)
	a, err := f.s.find("slow")
	must(t, err)
	if _, err := f.s.start(a, false, false); err != nil { // as Autostart does
		t.Fatal(err)
	}
	r, err := f.s.Start(context.Background(), "slow", true)
	if err != nil || !r.OK || r.App.State != StateRunning {
		t.Fatalf("a person's start during autostart's launch: %v %+v", err, r)
	}
}
