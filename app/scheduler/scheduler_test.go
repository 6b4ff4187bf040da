package scheduler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestFiresAtTheRightMinuteAcrossDaylightSaving moves an injected clock
// through Berlin's spring change: a schedule at 09:30 fires at 09:30 on
// both sides (08:30 UTC, then 07:30 UTC), and at no other time.
func TestFiresAtTheRightMinuteAcrossDaylightSaving(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	clock := newFakeClock(time.Date(2026, 3, 28, 6, 0, 0, 0, loc))
	e := testEngine(t, testRoot(t))
	defer e.Close()
	s := started(t, e, clock)
	v := mustCreate(t, s, Spec{Name: ptr("report"), Cron: ptr("30 9 * * *"), TimeZone: ptr("Europe/Berlin"), Code: ptr("echo report")})
	if v.NextRun == nil || !v.NextRun.Equal(time.Date(2026, 3, 28, 8, 30, 0, 0, time.UTC)) {
		t.Fatalf("next run %v, want 09:30 CET (08:30 UTC)", v.NextRun)
	}
	if v.Description != "every day at 09:30" || v.Zone != "Europe/Berlin" {
		t.Errorf("view %q in %q", v.Description, v.Zone)
	}

	// Just before each firing nothing has fired; at its minute it has.
	for i, due := range []time.Time{
		time.Date(2026, 3, 28, 8, 30, 0, 0, time.UTC),
		time.Date(2026, 3, 29, 7, 30, 0, 0, time.UTC), // after the change: 09:30 CEST
	} {
		clock.advanceTo(t, due.Add(-time.Second))
		if h, _ := s.History(context.Background(), v.ID, 0); len(h) != i {
			t.Fatalf("before %v: history %+v, want %d entries", due, h, i)
		}
		clock.advanceTo(t, due)
		h := history(t, s, v.ID, i+1)
		if !h[0].At.Equal(due) || h[0].Outcome != OutcomeOK || h[0].Trigger != TriggerSchedule || !h[0].StartedAt.Equal(due) {
			t.Fatalf("firing %d: %+v, want an ok firing at %v", i, h[0], due)
		}
		if _, off := h[0].At.In(loc).Zone(); h[0].At.In(loc).Hour() != 9 || h[0].At.In(loc).Minute() != 30 || off != []int{3600, 7200}[i] {
			t.Errorf("firing %d at %v local, want 09:30", i, h[0].At.In(loc))
		}
		run, err := e.Run(h[0].RunID)
		if err != nil || run.Source != app.SourceScheduler || run.ScheduleID != v.ID || run.Stdout != "report\n" {
			t.Fatalf("the firing's run: %+v %v", run, err)
		}
	}
	got, _ := s.Get(context.Background(), v.ID)
	if want := time.Date(2026, 3, 30, 7, 30, 0, 0, time.UTC); got.NextRun == nil || !got.NextRun.Equal(want) {
		t.Errorf("next run after the change %v, want %v", got.NextRun, want)
	}
}

// TestOverlappingFiringIsSkippedAndRecorded: while a run is still going,
// the next due time is skipped, and the skip is in the history.
func TestOverlappingFiringIsSkippedAndRecorded(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	gate := filepath.Join(root, "go")
	clock := newFakeClock(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	e := testEngine(t, root)
	defer e.Close()
	s := started(t, e, clock)
	v := mustCreate(t, s, Spec{Name: ptr("slow"), Cron: ptr("* * * * *"), TimeZone: ptr("UTC"),
		Code: ptr("while [ ! -e " + gate + " ]; do sleep 0.05; done; echo done")})
	clock.advanceTo(t, clock.Now().Add(time.Minute))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got, _ := s.Get(context.Background(), v.ID); got.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first firing did not start")
		}
	}
	clock.advanceTo(t, clock.Now().Add(time.Minute))
	skipped := history(t, s, v.ID, 1)
	if skipped[0].Outcome != OutcomeSkipped || !strings.Contains(skipped[0].Reason, "still going") {
		t.Fatalf("second firing: %+v, want a skip", skipped[0])
	}
	if _, err := s.RunNow(context.Background(), v.ID, true); err == nil || !strings.Contains(err.Error(), "still going") {
		t.Fatalf("run now during a run: %v, want a conflict", err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := history(t, s, v.ID, 2)
	if h[0].Outcome != OutcomeOK || h[1].Outcome != OutcomeSkipped || !h[0].At.Before(h[1].At) {
		t.Fatalf("history %+v, want the first run ok after the second skipped", h)
	}
}

// TestMissedRunsAfterARestart stops the engine for three hours: the
// schedule with missed policy skip records the three times it missed and
// runs nothing; the one with once runs one catch-up for the latest.
func TestMissedRunsAfterARestart(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	clock := newFakeClock(time.Date(2026, 5, 4, 10, 0, 30, 0, time.UTC))
	e := testEngine(t, root)
	s, err := New(Options{Engine: e, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())
	skip := mustCreate(t, s, Spec{Name: ptr("skipper"), Cron: ptr("0 * * * *"), TimeZone: ptr("UTC"), Code: ptr("echo skip")})
	once := mustCreate(t, s, Spec{Name: ptr("catcher"), Cron: ptr("0 * * * *"), TimeZone: ptr("UTC"), Code: ptr("echo once"), Missed: ptr(MissedOnce)})
	paused := mustCreate(t, s, Spec{Name: ptr("resting"), Cron: ptr("0 * * * *"), TimeZone: ptr("UTC"), Code: ptr("echo no"), Missed: ptr(MissedOnce), Paused: ptr(true)})
	s.Stop()
	e.Close()

	clock.now = time.Date(2026, 5, 4, 13, 10, 0, 0, time.UTC)
	e = testEngine(t, root)
	defer e.Close()
	s = started(t, e, clock)
	h := history(t, s, skip.ID, 1)
	if h[0].Outcome != OutcomeMissed || h[0].Missed != 3 || h[0].RunID != "" || !h[0].At.Equal(time.Date(2026, 5, 4, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("skip policy: %+v, want 3 missed and no run", h)
	}
	h = history(t, s, once.ID, 1)
	if h[0].Outcome != OutcomeOK || h[0].Trigger != TriggerCatchUp || !h[0].At.Equal(time.Date(2026, 5, 4, 13, 0, 0, 0, time.UTC)) || len(h) != 1 {
		t.Fatalf("once policy: %+v, want one catch-up for 13:00", h)
	}
	if h, _ := s.History(context.Background(), paused.ID, 0); len(h) != 0 {
		t.Fatalf("a paused schedule caught up: %+v", h)
	}
	for _, id := range []string{skip.ID, once.ID} {
		if v, _ := s.Get(context.Background(), id); v.NextRun == nil || !v.NextRun.Equal(time.Date(2026, 5, 4, 14, 0, 0, 0, time.UTC)) {
			t.Errorf("%s next run %v, want 14:00", id, v.NextRun)
		}
	}
	page, _ := e.RunsPage("", app.ListQuery{Limit: 100, Source: app.SourceScheduler})
	runs := page.Runs
	if len(runs) != 1 || runs[0].Stdout != "once\n" {
		t.Fatalf("runs after the restart: %+v, want the one catch-up", runs)
	}
}

// TestTheSwitchDecidesTheIsolation: Scheduler scripts on runs the firing
// in a bwrap sandbox, off runs it on the host recorded as none.
func TestTheSwitchDecidesTheIsolation(t *testing.T) {
	testutil.RequireBwrap(t)
	t.Parallel()
	e := testEngine(t, testRoot(t), bwrapBackend(""))
	defer e.Close()
	s := started(t, e, newFakeClock(time.Now()))
	v := mustCreate(t, s, Spec{Name: ptr("where"), Cron: ptr("@daily"), Code: ptr("echo \"$SCHED_ENV\"; id -u"), Env: map[string]string{"SCHED_ENV": "given"}})
	for _, on := range []bool{true, false} {
		setPolicy(t, e, func(p *app.ExecPolicy) { p.SchedulerScript = on })
		res, err := s.RunNow(context.Background(), v.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "bwrap", false: "none"}[on]
		r := res.Record
		if r.Isolation != want || r.ScheduleID != v.ID || r.Source != app.SourceScheduler || !strings.HasPrefix(res.Stdout, "given\n") {
			t.Fatalf("switch %v: record %+v stdout %q, want isolation %s", on, r, res.Stdout, want)
		}
		if on && os.Geteuid() == 0 && strings.HasSuffix(res.Stdout, "\n0\n") {
			t.Fatal("a sandboxed scheduled script ran as root")
		}
		h := history(t, s, v.ID, 1)
		if h[0].Isolation != want || h[0].Trigger != TriggerManual || h[0].RunID != r.ID {
			t.Fatalf("history %+v", h[0])
		}
	}
}

// TestNothingToIsolateIsRefusedAndNothingRuns: with the switch on and a
// bwrap whose binary fails, the firing is refused with the reason,
// recorded, and the script never runs (not even directly).
func TestNothingToIsolateIsRefusedAndNothingRuns(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	marker := filepath.Join(root, "ran")
	e := testEngine(t, root, bwrapBackend("/bin/false"))
	defer e.Close()
	setPolicy(t, e, func(p *app.ExecPolicy) { p.SchedulerScript = true })
	s := started(t, e, newFakeClock(time.Now()))
	v := mustCreate(t, s, Spec{Name: ptr("cleanup"), Cron: ptr("@hourly"), Code: ptr("touch " + marker)})
	res, err := s.RunNow(context.Background(), v.ID, true)
	if !app.IsRefused(err) || !strings.Contains(err.Error(), "no isolation") {
		t.Fatalf("err = %v, want a refusal for lack of isolation", err)
	}
	if res == nil || !strings.HasPrefix(res.Record.Isolation, "refused: no isolation") || res.Record.ScheduleID != v.ID {
		t.Fatalf("record %+v", res)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the script ran")
	}
	h := history(t, s, v.ID, 1)
	if h[0].Outcome != OutcomeRefused || !strings.Contains(h[0].Reason, "no isolation") || h[0].RunID != res.Record.ID {
		t.Fatalf("history %+v", h[0])
	}
}

// TestRunPythonOffRefusesAPythonSchedule: the Run Python switch applies
// to schedules as to every path; creating one while it is off says so.
func TestRunPythonOffRefusesAPythonSchedule(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	e := testEngine(t, root)
	defer e.Close()
	setPolicy(t, e, func(p *app.ExecPolicy) { p.RunPython = false })
	s := started(t, e, newFakeClock(time.Now()))
	v, notes, err := s.Create(context.Background(), Spec{Name: ptr("py"), Cron: ptr("@daily"), Language: ptr("py"), Code: ptr("print('hi')")})
	if err != nil {
		t.Fatal(err)
	}
	if v.Language != "python" || !strings.Contains(strings.Join(notes, "; "), "Run Python is off") {
		t.Fatalf("language %q, notes %q", v.Language, notes)
	}
	_, err = s.RunNow(context.Background(), v.ID, true)
	if !app.IsRefused(err) || !strings.Contains(err.Error(), "Python execution is switched off") {
		t.Fatalf("err = %v, want the Run Python refusal", err)
	}
	if h := history(t, s, v.ID, 1); h[0].Outcome != OutcomeRefused {
		t.Fatalf("history %+v", h[0])
	}
}

// TestBadSpecsChangeNothing: create and update refuse bad input with the
// field named, and leave the schedule as it was.
func TestBadSpecsChangeNothing(t *testing.T) {
	t.Parallel()
	e := testEngine(t, testRoot(t))
	defer e.Close()
	s := started(t, e, newFakeClock(time.Now()))
	v := mustCreate(t, s, Spec{Name: ptr("ok"), Cron: ptr("0 9 * * *"), Code: ptr("true")})
	cases := []struct {
		name  string
		spec  Spec
		field string
	}{
		{"no_name", Spec{Name: ptr(" ")}, "name"},
		{"name_with_escape", Spec{Name: ptr("a\x1b]0;x\a")}, "name"},
		{"name_with_c1_csi", Spec{Name: ptr("a\u009b31m")}, "name"},
		{"name_with_bidi_override", Spec{Name: ptr("a\u202eexe.txt")}, "name"},
		{"name_with_nel", Spec{Name: ptr("a\u0085b")}, "name"},
		{"name_too_long", Spec{Name: ptr(strings.Repeat("é", 101))}, "name"},
		{"bad_cron", Spec{Cron: ptr("0 25 * * *")}, "cron"},
		{"bad_zone", Spec{TimeZone: ptr("Nowhere/Land")}, "timeZone"},
		{"bad_language", Spec{Language: ptr("cobol")}, "language"},
		{"empty_code", Spec{Code: ptr("")}, "code"},
		{"timeout_too_long", Spec{TimeoutMs: ptr(600001)}, "timeoutMs"},
		{"bad_env", Spec{Env: map[string]string{"A B": "x"}}, "env"},
		{"bad_missed", Spec{Missed: ptr("always")}, "missed"},
		{"bad_jitter", Spec{JitterSec: ptr(-1)}, "jitterSec"},
	}
	for _, tc := range cases {
		_, _, err := s.Update(context.Background(), v.ID, tc.spec)
		var fe *app.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a field error on %s", tc.name, err, tc.field)
		}
	}
	if _, _, err := s.Create(context.Background(), Spec{Name: ptr("x"), Code: ptr("true")}); err == nil || !strings.Contains(err.Error(), "cron") {
		t.Errorf("create without cron: %v", err)
	}
	got, _ := s.Get(context.Background(), v.ID)
	if got.Name != "ok" || got.Cron != "0 9 * * *" || got.Code != "true" || got.TimeoutMs != 600000 || got.Missed != MissedSkip {
		t.Fatalf("the schedule changed: %+v", got)
	}
	if _, err := s.Get(context.Background(), "nope"); !isNotFound(err) {
		t.Fatalf("unknown id: %v", err)
	}
}

// TestJitterIsFixedPerSchedule: jitter delays each firing by the same
// share, below the setting.
func TestJitterIsFixedPerSchedule(t *testing.T) {
	t.Parallel()
	e := testEngine(t, testRoot(t))
	defer e.Close()
	clock := newFakeClock(time.Date(2026, 5, 4, 10, 0, 30, 0, time.UTC))
	s := started(t, e, clock)
	v := mustCreate(t, s, Spec{Name: ptr("j"), Cron: ptr("0 * * * *"), TimeZone: ptr("UTC"), Code: ptr("true"), JitterSec: ptr(300)})
	if d := v.NextRun.Sub(v.NextRun.Truncate(time.Hour)); d <= 0 || d >= 300*time.Second || !v.NextRun.After(clock.Now()) {
		t.Fatalf("jittered next run %v, want a full hour plus under 300 s, after now", v.NextRun)
	}
	clock.advanceTo(t, *v.NextRun)
	h := history(t, s, v.ID, 1)
	got, _ := s.Get(context.Background(), v.ID)
	if !h[0].At.Equal(*v.NextRun) || got.NextRun.Sub(*v.NextRun) != time.Hour {
		t.Fatalf("fired at %v, next %v: the jitter moved", h[0].At, got.NextRun)
	}
}

// TestSchedulesAreBounded: past the bound a new schedule is refused (an
// agent could otherwise store them without end) and nothing is stored;
// the ones held still update.
func TestSchedulesAreBounded(t *testing.T) {
	t.Parallel()
	e := testEngine(t, testRoot(t))
	defer e.Close()
	s, err := New(Options{Engine: e, Clock: newFakeClock(time.Now()), MaxSchedules: 2})
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())
	defer s.Stop()
	spec := Spec{Name: ptr("job"), Cron: ptr("* * * * *"), Code: ptr("true")}
	first := mustCreate(t, s, spec)
	mustCreate(t, s, spec)
	_, _, err = s.Create(context.Background(), spec)
	var le *app.LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "2 schedules") {
		t.Fatalf("a third schedule: %v, want a limit refusal", err)
	}
	if got := s.List(context.Background(), "*"); len(got) != 2 {
		t.Errorf("%d schedules held after a refusal", len(got))
	}
	if _, _, err := s.Update(context.Background(), first.ID, Spec{Name: ptr("renamed")}); err != nil {
		t.Errorf("an update at the bound: %v", err)
	}
}
