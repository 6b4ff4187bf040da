package desktop

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
)

func capsOf(state string, bs ...backends.Capability) *app.Capabilities {
	c := &app.Capabilities{State: state, Backends: bs, Summary: "summary: " + state}
	for _, b := range bs {
		if b.Isolates && b.Usable() {
			c.Recommended = b.Backend
			break
		}
	}
	return c
}

func backend(name string, s backends.ProbeState) backends.Capability {
	return backends.Capability{Backend: name, State: s, Isolates: true, Reason: name + " reason"}
}

var directCap = backends.Capability{Backend: "direct", State: backends.Healthy}

func TestStatusOf(t *testing.T) {
	t.Parallel()
	on := &app.ExecPolicy{ExecShell: true}
	off := &app.ExecPolicy{}
	cases := []struct {
		name  string
		snap  Snapshot
		level Level
		text  string
	}{
		{"isolated", Snapshot{Policy: on, Caps: capsOf(app.Isolated, backend("bwrap", backends.Healthy), directCap)}, LevelIsolated, "bwrap"},
		{"degraded_switches_off", Snapshot{Policy: off, Caps: capsOf(app.Degraded, backend("bwrap", backends.NeverSeen), directCap)}, LevelDegraded, "every enforcement switch is off"},
		{"degraded_switch_on", Snapshot{Policy: on, Caps: capsOf(app.Degraded, backend("bwrap", backends.NeverSeen), directCap)}, LevelAttention, "Agent shell"},
		{"python_on_counts", Snapshot{Policy: &app.ExecPolicy{RunPython: true}, Caps: capsOf(app.Degraded, directCap)}, LevelAttention, "Run Python"},
		{"backend_gone", Snapshot{Policy: off, Caps: capsOf(app.Degraded, backend("docker", backends.SeenGone), directCap)}, LevelAttention, "docker stopped working"},
		{"gone_but_another_isolates", Snapshot{Policy: off, Caps: capsOf(app.Isolated, backend("docker", backends.SeenGone), backend("bwrap", backends.Healthy))}, LevelAttention, "still runs isolated with bwrap"},
		{"engine_silent", Snapshot{Err: errors.New("connection refused")}, LevelAttention, "does not answer: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := statusOf(tc.snap)
			if st.Level != tc.level || !strings.Contains(st.Text, tc.text) {
				t.Errorf("statusOf = %+v, want level %s and text containing %q", st, tc.level, tc.text)
			}
		})
	}
}

func TestIsolationChange(t *testing.T) {
	t.Parallel()
	both := capsOf(app.Isolated, backend("bwrap", backends.Healthy), backend("docker", backends.Healthy))
	bwrapOnly := capsOf(app.Isolated, backend("bwrap", backends.Healthy), backend("docker", backends.SeenGone))
	none := capsOf(app.Degraded, backend("bwrap", backends.SeenGone), backend("docker", backends.SeenGone))
	cases := []struct {
		name     string
		old, cur *app.Capabilities
		summary  string
		critical bool
	}{
		{"docker_went_away", both, bwrapOnly, "docker stopped working", false},
		{"all_gone", bwrapOnly, none, "Isolation lost: bwrap stopped working", true},
		{"both_gone_at_once", both, none, "Isolation lost: bwrap and docker stopped working", true},
		{"back", none, bwrapOnly, "Isolation is back: code runs in bwrap sandboxes", false},
		{"docker_back", bwrapOnly, both, "docker works again", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, changed := isolationChange(tc.old, tc.cur)
			if !changed || n.Summary != tc.summary || n.Critical != tc.critical || n.Kind != KindIsolation {
				t.Errorf("isolationChange = %+v, %v; want summary %q critical %v", n, changed, tc.summary, tc.critical)
			}
			if !strings.Contains(n.Body, tc.cur.Summary) {
				t.Errorf("body %q does not say the new state %q", n.Body, tc.cur.Summary)
			}
		})
	}
	if n, changed := isolationChange(both, capsOf(app.Isolated, backend("bwrap", backends.Healthy), backend("docker", backends.Healthy))); changed {
		t.Errorf("no change reported as %+v", n)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func refusedRun(id string) app.RunRecord {
	return app.RunRecord{ID: id, Source: "agent-shell", Command: "ls " + id, Isolation: "refused: no isolation is available on this machine"}
}
func okRun(id string) app.RunRecord {
	return app.RunRecord{ID: id, Source: "rest", Command: "true", Isolation: "bwrap"}
}
func runs(rs ...app.RunRecord) []app.RunRecord { return rs }

// recorder collects what notifications would send.
type recorder struct{ sent []Notification }

func (r *recorder) send(_ context.Context, n Notification) error {
	r.sent = append(r.sent, n)
	return nil
}

func TestNotificationsRateLimit(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	rec := &recorder{}
	n := &notifications{limit: newRateLimit(time.Minute, clock.now), send: rec.send, on: true, log: discard()}
	ctx := context.Background()
	iso := capsOf(app.Isolated, backend("bwrap", backends.Healthy))
	gone := capsOf(app.Degraded, backend("bwrap", backends.SeenGone))

	// The first snapshot is the baseline: nothing is told about it,
	// not even the refused run already in the history.
	n.handle(ctx, Snapshot{Caps: iso, Runs: runs(refusedRun("r0"))})
	if len(rec.sent) != 0 {
		t.Fatalf("sent at start: %+v", rec.sent)
	}
	n.handle(ctx, Snapshot{Caps: gone, Runs: runs(refusedRun("r0"))})
	if len(rec.sent) != 1 || rec.sent[0].Kind != KindIsolation {
		t.Fatalf("after losing isolation: %+v", rec.sent)
	}
	// Back and gone again within the minute: held back, then nothing to
	// tell, since the user already knows it is gone.
	clock.add(10 * time.Second)
	n.handle(ctx, Snapshot{Caps: iso, Runs: runs(refusedRun("r0"))})
	clock.add(10 * time.Second)
	n.handle(ctx, Snapshot{Caps: gone, Runs: runs(refusedRun("r0"))})
	clock.add(time.Minute)
	n.handle(ctx, Snapshot{Caps: gone, Runs: runs(refusedRun("r0"))})
	if len(rec.sent) != 1 {
		t.Fatalf("a flap inside the window was told: %+v", rec.sent[1:])
	}
	// Back, within a fresh window: told at once.
	n.handle(ctx, Snapshot{Caps: iso, Runs: runs(refusedRun("r0"))})
	if len(rec.sent) != 2 || !strings.HasPrefix(rec.sent[1].Summary, "Isolation is back") {
		t.Fatalf("after isolation came back: %+v", rec.sent)
	}

	// Refused runs: the first is told, the next ones in the same minute
	// are held and told together once the minute has passed.
	n.handle(ctx, Snapshot{Caps: iso, Runs: runs(refusedRun("r1"), okRun("o1"), refusedRun("r0"))})
	clock.add(5 * time.Second)
	n.handle(ctx, Snapshot{Caps: iso, Runs: runs(refusedRun("r3"), refusedRun("r2"), refusedRun("r1"))})
	if len(rec.sent) != 3 || rec.sent[2].Summary != "A run was refused: nothing can isolate" || !strings.Contains(rec.sent[2].Body, "ls r1") {
		t.Fatalf("after one refused run: %+v", rec.sent)
	}
	clock.add(time.Minute)
	n.handle(ctx, Snapshot{Caps: iso, Runs: runs(refusedRun("r3"), refusedRun("r2"), refusedRun("r1"))})
	if len(rec.sent) != 4 || rec.sent[3].Summary != "2 runs were refused: nothing can isolate" || !strings.Contains(rec.sent[3].Body, "ls r3") || !strings.Contains(rec.sent[3].Body, "ls r2") {
		t.Fatalf("held-back refused runs: %+v", rec.sent[3:])
	}

	// A failed poll tells nothing and forgets nothing.
	n.handle(ctx, Snapshot{Err: errors.New("no answer")})
	if len(rec.sent) != 4 {
		t.Fatalf("a failed poll sent %+v", rec.sent[4:])
	}
}

// TestRefusedRunFirstSeenRunning: a run is on disk as running before the
// engine chooses its backend, so a poll can list a run that is about to be
// refused with no isolation yet. Its refusal, seen at a later poll, is
// told all the same; so is that of a run the first poll saw running.
func TestRefusedRunFirstSeenRunning(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	n := &notifications{limit: newRateLimit(time.Minute, newFakeClock().now), send: rec.send, on: true, log: discard()}
	ctx := context.Background()
	gone := capsOf(app.Degraded, backend("bwrap", backends.SeenGone))
	running := func(id string) app.RunRecord {
		return app.RunRecord{ID: id, Source: "rest", Command: "ls " + id, State: "running"}
	}
	refused := func(id string) app.RunRecord {
		r := refusedRun(id)
		r.State = "done"
		return r
	}

	n.handle(ctx, Snapshot{Caps: gone, Runs: runs(running("r0"))})
	n.handle(ctx, Snapshot{Caps: gone, Runs: runs(running("r1"), running("r0"))})
	if len(rec.sent) != 0 {
		t.Fatalf("sent for runs still running: %+v", rec.sent)
	}
	n.handle(ctx, Snapshot{Caps: gone, Runs: runs(refused("r1"), refused("r0"))})
	if len(rec.sent) != 1 || rec.sent[0].Kind != KindRefused || rec.sent[0].Summary != "2 runs were refused: nothing can isolate" ||
		!strings.Contains(rec.sent[0].Body, "ls r1") || !strings.Contains(rec.sent[0].Body, "ls r0") {
		t.Fatalf("after two runs first seen running were refused: %+v", rec.sent)
	}
	n.handle(ctx, Snapshot{Caps: gone, Runs: runs(refused("r1"), refused("r0"))})
	if len(rec.sent) != 1 {
		t.Fatalf("refused runs told twice: %+v", rec.sent[1:])
	}
}

func TestNotificationsOff(t *testing.T) {
	t.Parallel()
	off, on := false, true
	iso := capsOf(app.Isolated, backend("bwrap", backends.Healthy))
	gone := capsOf(app.Degraded, backend("bwrap", backends.SeenGone))
	cases := []struct {
		name    string
		option  bool
		setting *bool
		want    int
	}{
		{"option_on", true, nil, 1},
		{"option_off", false, nil, 0},
		{"setting_off_wins", true, &off, 0},
		{"setting_on_wins", false, &on, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			rec := &recorder{}
			n := &notifications{limit: newRateLimit(time.Minute, clock.now), send: rec.send, on: tc.option, log: discard()}
			n.handle(context.Background(), Snapshot{Caps: iso, Notifications: tc.setting})
			n.handle(context.Background(), Snapshot{Caps: gone, Notifications: tc.setting})
			if len(rec.sent) != tc.want {
				t.Fatalf("sent %d notifications, want %d: %+v", len(rec.sent), tc.want, rec.sent)
			}
		})
	}
	// Turned on after a change while off: the change is not replayed.
	clock := newFakeClock()
	rec := &recorder{}
	n := &notifications{limit: newRateLimit(time.Minute, clock.now), send: rec.send, on: true, log: discard()}
	n.handle(context.Background(), Snapshot{Caps: iso, Notifications: &off})
	n.handle(context.Background(), Snapshot{Caps: gone, Notifications: &off})
	n.handle(context.Background(), Snapshot{Caps: gone, Notifications: &on})
	if len(rec.sent) != 0 {
		t.Fatalf("a change made while notifications were off was told later: %+v", rec.sent)
	}
}

// TestSpaceAppNotifications: an app that comes to need a restart is told
// once with the reason, one that gives up is told with its log's end, an
// app already in that state when the tray starts is not told, and one
// that leaves the state and comes back is told again. Names stay plain
// in summaries.
func TestSpaceAppNotifications(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	rec := &recorder{}
	n := &notifications{limit: newRateLimit(time.Minute, clock.now), send: rec.send, on: true, log: discard()}
	ctx := context.Background()
	old := AppAlert{ID: "old", Name: "Old", NeedsRestart: true, Reason: "readMode changed since it started"}
	notes := AppAlert{ID: "notes", Name: "Notes <b>&amp;</b>\u202e", NeedsRestart: true, Reason: "configured with a sandbox, running without one"}
	n.handle(ctx, Snapshot{Apps: []AppAlert{old}})
	n.handle(ctx, Snapshot{Apps: []AppAlert{old, notes}})
	if len(rec.sent) != 1 || rec.sent[0].Kind != KindAppRestart || rec.sent[0].Summary != `Space App Notes bamp;/b\u202e needs a restart` ||
		!strings.Contains(rec.sent[0].Body, "Notes <b>&amp;</b>") || !strings.Contains(rec.sent[0].Body, "configured with a sandbox, running without one") {
		t.Fatalf("sent %+v", rec.sent)
	}
	n.handle(ctx, Snapshot{Apps: []AppAlert{old, notes}})
	if len(rec.sent) != 1 {
		t.Fatalf("told twice: %+v", rec.sent)
	}
	looping := AppAlert{ID: "crash", Name: "Crash", CrashLooping: true, LastLog: []string{"a", "b", "Traceback: boom\x1b[2J"}}
	n.handle(ctx, Snapshot{Apps: []AppAlert{old, notes, looping}})
	if len(rec.sent) != 2 || rec.sent[1].Kind != KindAppGaveUp || rec.sent[1].Summary != "Space App Crash gave up: crash-looping" || !strings.Contains(rec.sent[1].Body, `Traceback: boom\x1b[2J`) {
		t.Fatalf("sent %+v", rec.sent)
	}
	// notes restarts, then needs one again: news again, after the limit.
	n.handle(ctx, Snapshot{Apps: []AppAlert{old, looping}})
	n.handle(ctx, Snapshot{Apps: []AppAlert{old, notes, looping}})
	if len(rec.sent) != 2 {
		t.Fatalf("told inside the rate limit: %+v", rec.sent)
	}
	clock.add(time.Minute)
	n.handle(ctx, Snapshot{Apps: []AppAlert{old, notes, looping}})
	if len(rec.sent) != 3 || rec.sent[2].Kind != KindAppRestart {
		t.Fatalf("a held-back change was not told after the limit: %+v", rec.sent)
	}
	if st := statusOf(Snapshot{Caps: &app.Capabilities{State: app.Isolated, Recommended: "bwrap"}, Apps: []AppAlert{notes, looping}}); st.Level != LevelAttention ||
		!strings.Contains(st.Text, "needs a restart") || !strings.Contains(st.Text, "Crash is crash-looping") {
		t.Fatalf("status %+v", st)
	}
}
