package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/principal"
)

const (
	// maxSleep is the longest the timer waits before looking at the wall
	// clock again: a timer counts monotonic time, which stands still
	// while the machine sleeps and ignores changes of the clock.
	maxSleep = time.Minute
	// lateAfter: a firing this late is a missed one (the machine slept
	// through it, or the engine stalled), handled by the missed policy.
	lateAfter = 2 * time.Minute
	// maxCounted bounds the count of missed times.
	maxCounted = 10000
)

// Firing triggers.
const (
	TriggerSchedule = "schedule"
	TriggerCatchUp  = "catch-up"
	TriggerManual   = "manual"
)

// action is what the scheduler decided under its lock and does after it:
// start a run, or record a firing that ran nothing.
type action struct {
	id      string
	sched   Schedule
	at      time.Time
	trigger string
	record  *Firing // set: record this, run nothing
}

func (s *Scheduler) loop(ctx context.Context) {
	defer close(s.loopDone)
	for {
		now := s.clock.Now()
		s.perform(s.due(now))
		wait := maxSleep
		s.mu.Lock()
		for _, en := range s.entries {
			if !en.next.IsZero() {
				wait = min(wait, max(en.next.Sub(now), 0))
			}
		}
		s.mu.Unlock()
		c, stop := s.clock.Timer(wait)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-c:
		case <-s.wake:
			stop()
		}
	}
}

// due decides what the schedules due at now do.
func (s *Scheduler) due(now time.Time) []action {
	s.mu.Lock()
	defer s.mu.Unlock()
	var acts []action
	for id, en := range s.entries {
		if en.next.IsZero() || en.next.After(now) {
			continue
		}
		at := en.next
		if now.Sub(at) > lateAfter {
			acts = append(acts, s.catchUp(en, now)...)
			continue
		}
		// A firing that comes a little late covers the due times it
		// passed: one run, then on from now.
		en.through = at
		en.next = s.nextOf(en, maxTime(at, now))
		acts = append(acts, s.fireLocked(id, en, at, TriggerSchedule))
	}
	return acts
}

// catchUp handles the times en was due after its through and up to now,
// when there are any, by its missed policy. Called with the lock held.
func (s *Scheduler) catchUp(en *entry, now time.Time) []action {
	from := en.through
	if from.IsZero() {
		from = now
	}
	first := s.nextOf(en, from)
	if first.IsZero() || first.After(now) {
		en.next = first
		return nil
	}
	n, latest := 0, first
	for t := first; !t.IsZero() && !t.After(now) && n < maxCounted; t = s.nextOf(en, t) {
		n, latest = n+1, t
	}
	en.through = now
	en.next = s.nextOf(en, now)
	if en.s.Missed == MissedOnce {
		return []action{s.fireLocked(en.s.ID, en, latest, TriggerCatchUp)}
	}
	count := fmt.Sprintf("%d times", n)
	switch {
	case n == 1:
		count = "1 time"
	case n == maxCounted:
		count = fmt.Sprintf("more than %d times", maxCounted)
	}
	f := &Firing{At: latest, Trigger: TriggerSchedule, Outcome: OutcomeMissed, Missed: n,
		Reason: fmt.Sprintf("missed %s it was due (the first at %s) while the engine was not running or the machine slept; the missed policy is skip (set it to once to catch up with one run)", count, first.Format(time.RFC3339))}
	en.last = f
	return []action{{id: en.s.ID, at: now, record: f}}
}

// fireLocked starts a firing of en at at, or skips it when en's previous
// run is still going. Called with the lock held.
func (s *Scheduler) fireLocked(id string, en *entry, at time.Time, trigger string) action {
	if en.running {
		f := &Firing{At: at, Trigger: trigger, Outcome: OutcomeSkipped,
			Reason: "the previous run, started at " + en.since.Format(time.RFC3339) + ", was still going"}
		en.last = f
		return action{id: id, at: at, record: f}
	}
	en.running, en.since, en.trigger = true, s.clock.Now(), trigger
	s.firings.Add(1)
	return action{id: id, sched: en.s, at: at, trigger: trigger}
}

func (s *Scheduler) perform(acts []action) {
	for _, a := range acts {
		if a.record != nil {
			s.log.Info("A schedule's firing ran nothing.", "schedule", a.id, "outcome", a.record.Outcome, "reason", a.record.Reason)
			s.record(a.id, a.record, a.at)
			continue
		}
		go func() { _, _ = s.run(s.runCtx, a) }()
	}
}

// run runs one firing through the engine and records it. The caller has
// marked the entry running and counted the firing.
func (s *Scheduler) run(ctx context.Context, a action) (*app.RunResult, error) {
	defer s.firings.Done()
	if a.trigger != TriggerManual {
		s.record(a.id, nil, a.at) // the time is handled even if the engine dies during the run
	}
	started := s.clock.Now()
	res, err := s.e.SchedulerScript(ctx, scheduledRun(&a.sched))
	f := firingOf(a, started, res, err)
	s.mu.Lock()
	if en, ok := s.entries[a.id]; ok {
		en.running, en.last = false, &f
	}
	s.mu.Unlock()
	s.record(a.id, &f, time.Time{})
	if f.Outcome == OutcomeOK {
		s.log.Info("A scheduled run ended.", "schedule", a.id, "run", f.RunID, "isolation", f.Isolation)
	} else {
		s.log.Warn("A scheduled run did not succeed.", "schedule", a.id, "run", f.RunID, "outcome", f.Outcome, "reason", f.Reason)
	}
	return res, err
}

// firingOf is the history entry of a firing that went to the runner.
func firingOf(a action, started time.Time, res *app.RunResult, err error) Firing {
	f := Firing{At: a.at, Trigger: a.trigger, StartedAt: started, Outcome: OutcomeOK}
	if res != nil {
		r := res.Record
		f.RunID, f.ExitCode, f.Isolation, f.DurationMs = r.ID, r.ExitCode, r.Isolation, r.DurationMs
		switch {
		case r.TimedOut:
			f.Outcome, f.Reason = OutcomeFailed, fmt.Sprintf("timed out after %d ms", r.DurationMs)
		case r.Killed != "":
			f.Outcome, f.Reason = OutcomeFailed, "killed: "+r.Killed
		case r.ExitCode != nil && *r.ExitCode != 0:
			f.Outcome, f.Reason = OutcomeFailed, fmt.Sprintf("exited with %d", *r.ExitCode)
		case r.ExitCode == nil && r.Error != "":
			f.Outcome, f.Reason = OutcomeFailed, r.Error
		}
	}
	if err != nil {
		f.Outcome, f.Reason = OutcomeFailed, err.Error()
		if app.IsRefused(err) {
			f.Outcome = OutcomeRefused
		}
	}
	return f
}

// record keeps f (when set) at the top of the schedule's history and moves
// its through to at (when later). A schedule deleted meanwhile is left
// alone.
func (s *Scheduler) record(id string, f *Firing, at time.Time) {
	err := s.e.EditSchedule(id, func(data []byte) ([]byte, error) {
		var d doc
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, err
		}
		if f != nil {
			d.History = append([]Firing{*f}, d.History...)
			if len(d.History) > maxHistory {
				d.History = d.History[:maxHistory]
			}
		}
		if at.After(d.Through) {
			d.Through = at
		}
		return json.Marshal(d)
	})
	if err != nil && !isNotFound(err) {
		s.log.Error("A schedule's history could not be saved.", "schedule", id, "err", err)
	}
}

// RunNow fires a schedule at once, paused or not. With wait it returns
// the run's result when it ends (the caller's ctx cancelling kills it);
// without, it returns at once and the run goes on. A schedule whose
// previous run is still going is a conflict.
func (s *Scheduler) RunNow(ctx context.Context, id string, wait bool) (*app.RunResult, error) {
	if err := s.visible(ctx, id); err != nil {
		return nil, err
	}
	if err := s.mayRunAs(principal.Of(ctx)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	en, ok := s.entries[id]
	if !ok {
		s.mu.Unlock()
		return nil, &app.NotFoundError{Kind: "schedule", ID: id}
	}
	if s.runCtx.Err() != nil {
		s.mu.Unlock()
		return nil, &app.ConflictError{Reason: "the scheduler is stopping"}
	}
	if en.running {
		since := en.since
		s.mu.Unlock()
		return nil, &app.ConflictError{Reason: "the schedule's previous run, started at " + since.Format(time.RFC3339) + ", is still going; wait for it (senclaw schedule history ID)"}
	}
	a := s.fireLocked(id, en, s.clock.Now(), TriggerManual)
	s.mu.Unlock()
	if !wait {
		go func() { _, _ = s.run(s.runCtx, a) }()
		return nil, nil
	}
	runCtx, cancel := context.WithCancel(s.runCtx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	return s.run(runCtx, a)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func isNotFound(err error) bool {
	_, ok := err.(*app.NotFoundError)
	return ok
}
