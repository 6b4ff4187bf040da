//go:build linux

package desktop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/scheduler"
	"github.com/senclaw/sandbox/internal/testutil"
)

func scheduledRun(id string, exit int, isolation string) app.RunRecord {
	return app.RunRecord{ID: id, Source: app.SourceScheduler, SandboxName: "schedule:nightly (direct)", ScheduleID: "s1", State: "done", ExitCode: &exit, Isolation: isolation}
}

// TestScheduledRunAlerts: the first snapshot is the baseline; a failed or
// refused scheduled run is told once, by its own kind (not also as a
// refused run), and those the rate limit holds back are told together.
func TestScheduledRunAlerts(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	rec := &recorder{}
	n := &notifications{limit: newRateLimit(time.Minute, clock.now), send: rec.send, on: true, log: discard()}
	ctx := context.Background()
	old := scheduledRun("r0", 1, "none")
	n.handle(ctx, Snapshot{ScheduledRuns: []app.RunRecord{old}, Runs: []app.RunRecord{old}})
	if len(rec.sent) != 0 {
		t.Fatalf("told about the baseline: %+v", rec.sent)
	}
	ok := scheduledRun("r1", 0, "bwrap")
	failed := scheduledRun("r2", 3, "none")
	n.handle(ctx, Snapshot{ScheduledRuns: []app.RunRecord{failed, ok, old}})
	if len(rec.sent) != 1 || rec.sent[0].Kind != KindScheduled || rec.sent[0].Summary != `Scheduled script "nightly" failed` || !strings.Contains(rec.sent[0].Body, "exited with 3 (isolation none)") {
		t.Fatalf("after a failed run: %+v", rec.sent)
	}
	refused := app.RunRecord{ID: "r3", Source: app.SourceScheduler, SandboxName: "schedule:nightly", State: "done", Isolation: "refused: no isolation is available on this machine"}
	timedOut := scheduledRun("r4", 0, "bwrap")
	timedOut.ExitCode, timedOut.TimedOut, timedOut.DurationMs = nil, true, 600000
	runs := []app.RunRecord{timedOut, refused, failed}
	n.handle(ctx, Snapshot{ScheduledRuns: runs, Runs: runs})
	if len(rec.sent) != 1 {
		t.Fatalf("inside the rate limit's window: %+v", rec.sent[1:])
	}
	clock.add(time.Minute)
	n.handle(ctx, Snapshot{ScheduledRuns: runs, Runs: runs})
	if len(rec.sent) != 2 {
		t.Fatalf("held back: %+v", rec.sent)
	}
	got := rec.sent[1]
	if got.Summary != "2 scheduled runs did not succeed" || !got.Critical || !strings.Contains(got.Body, "timed out after 600 s") || !strings.Contains(got.Body, "refused: no isolation") {
		t.Fatalf("held-back notification = %+v", got)
	}
}

// TestScheduledFailureNotifiesOverDBus: a schedule of a real daemon fails,
// then is refused for lack of isolation; each reaches a notification
// server on a private D-Bus, the second after the rate limit's window,
// and the refusal is not told twice.
func TestScheduledFailureNotifiesOverDBus(t *testing.T) {
	t.Parallel()
	addr := startBus(t)
	notes := serveNotifications(t, connect(t, addr))
	c, _ := testDaemon(t)
	bus := newBusNotifier(connect(t, addr), trayIcon)
	const gap = time.Second
	n := &notifications{limit: newRateLimit(gap, time.Now), send: bus.Send, on: true, log: discard()}
	ctx, cancel := context.WithCancel(context.Background())
	polled := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			n.handle(ctx, poll(ctx, c))
			select {
			case polled <- struct{}{}:
			default:
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-polled // the baseline

	v, err := c.CreateSchedule(callCtx(t), scheduler.Spec{Name: new("nightly"), Cron: new("@daily"), Code: new("echo '<b>x</b>'; exit 3")})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.RunSchedule(callCtx(t), v.Schedule.ID); err != nil || res.Run.Isolation != "none" {
		t.Fatalf("run now: %+v %v", res, err)
	}
	testutil.WaitFor(t, 5*time.Second, "a notification of the failed scheduled run", func() bool { return len(notes.all()) >= 1 })
	first := notes.all()[0]
	if first.Summary != `Scheduled script "nightly" failed` || !strings.Contains(first.Body, "nightly: exited with 3 (isolation none)") {
		t.Fatalf("notification %q: %q", first.Summary, first.Body)
	}

	pol, _ := c.Policy(callCtx(t))
	pol.SchedulerScript = true
	if _, err := c.SetPolicy(callCtx(t), *pol); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunSchedule(callCtx(t), v.Schedule.ID); err == nil {
		t.Fatal("run now with the switch on and nothing to isolate was not refused")
	}
	testutil.WaitFor(t, 5*time.Second, "a notification of the refused scheduled run", func() bool { return len(notes.all()) >= 2 })
	second := notes.all()[1]
	if second.Summary != `Scheduled script "nightly" was refused` || !strings.Contains(second.Body, "refused: no isolation") {
		t.Fatalf("notification %q: %q", second.Summary, second.Body)
	}
	if u, _ := second.Hints["urgency"].Value().(byte); u != 2 {
		t.Errorf("a refusal's urgency %v, want critical (2)", second.Hints["urgency"].Value())
	}
	if gapSeen := second.At.Sub(first.At); gapSeen < gap-100*time.Millisecond {
		t.Errorf("two notifications %v apart, want the rate limit's %v", gapSeen, gap)
	}
	time.Sleep(300 * time.Millisecond)
	if len(notes.all()) != 2 {
		t.Errorf("%d notifications, want exactly 2 (the refusal told once)", len(notes.all()))
	}
}
