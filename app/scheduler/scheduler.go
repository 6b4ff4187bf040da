// Package scheduler fires scheduled scripts as runs through the engine's
// single runner.
//
// A scheduled script is a cron-timed bash script or Python or Node code.
// Each firing is a run (source scheduler) under the Scheduler scripts
// switch, as app.Engine.SchedulerScript decides: a one-shot sandbox when the
// switch is on (refused, never run unconfined, when nothing can isolate),
// directly on the host, recorded as none, when it is off.
//
// It is a capability built on the engine's exported surface. Schedules
// are documents in the engine's store; expressions are read with
// robfig/cron's parser, in the schedule's own time zone. One timer waits
// for the soonest firing (Nomad's periodic dispatcher; robfig/cron's
// Schedule.Next), re-armed at most a minute ahead so that the wall clock's
// jumps and the machine's sleeps are noticed; there is no loop waking
// every second. A firing whose previous run is still going is skipped and
// the skip kept in the schedule's history; times missed while the engine
// was not running are forgotten (missed policy skip, the default, with
// their count in the history) or caught up by one run (once).
package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/principal"
)

// Options configure a Scheduler.
type Options struct {
	Engine *app.Engine
	// Clock is the scheduler's time; nil means the real one.
	Clock  Clock
	Logger *slog.Logger
	// MaxSchedules bounds the schedules held; 0 is DefaultMaxSchedules.
	MaxSchedules int
}

// Scheduler keeps the schedules and fires them. Create it with New, start
// it after the engine with Start, and stop it with Stop before the engine
// closes.
type Scheduler struct {
	e     *app.Engine
	clock Clock
	log   *slog.Logger
	max   int

	mu      sync.Mutex
	entries map[string]*entry
	// runCtx is the context of firings started by the timer; Stop
	// cancels it, which kills their runs.
	runCtx     context.Context
	cancelRuns context.CancelFunc
	stopLoop   context.CancelFunc
	loopDone   chan struct{}
	firings    sync.WaitGroup

	wake chan struct{}
}

// entry is one schedule as the scheduler keeps it in memory.
type entry struct {
	s    Schedule
	expr *Expr // nil when the stored expression no longer parses
	// through: every due time up to it has been handled.
	through time.Time
	next    time.Time // zero when paused or never
	running bool
	since   time.Time
	trigger string // of the firing running now
	last    *Firing
}

// New loads the stored schedules. Nothing fires before Start.
func New(o Options) (*Scheduler, error) {
	if o.Engine == nil {
		return nil, errors.New("scheduler: no engine given")
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{e: o.Engine, clock: o.Clock, log: o.Logger, max: o.MaxSchedules, entries: map[string]*entry{}, wake: make(chan struct{}, 1)}
	if s.max <= 0 {
		s.max = DefaultMaxSchedules
	}
	s.runCtx, s.cancelRuns = context.WithCancel(context.Background())
	err := s.e.EachSchedule(func(data []byte) error {
		var d doc
		if err := json.Unmarshal(data, &d); err != nil {
			return err
		}
		en := &entry{s: d.Schedule, through: d.Through}
		if len(d.History) > 0 {
			en.last = &d.History[0]
		}
		x, err := ParseExpr(d.Cron, d.TimeZone)
		if err != nil {
			s.log.Warn("A stored schedule's expression no longer parses; it will not fire until it is changed.", "schedule", d.ID, "err", err)
		}
		en.expr = x
		s.entries[d.ID] = en
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Start catches up the times missed while the engine was not running, as
// each schedule's missed policy says, and starts the timer.
func (s *Scheduler) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.stopLoop, s.loopDone = cancel, make(chan struct{})
	now := s.clock.Now()
	var acts []action
	for _, en := range s.entries {
		acts = append(acts, s.catchUp(en, now)...)
	}
	s.mu.Unlock()
	s.perform(acts)
	go s.loop(ctx)
}

// Stop stops the timer, kills the runs of firings still going and waits
// for their records.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	stop, done := s.stopLoop, s.loopDone
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	s.cancelRuns()
	s.firings.Wait()
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// nextOf is en's next due time after t, its jitter included.
func (s *Scheduler) nextOf(en *entry, t time.Time) time.Time {
	if en.expr == nil || en.s.Paused {
		return time.Time{}
	}
	j := jitter(&en.s)
	n := en.expr.Next(t.Add(-j))
	if n.IsZero() {
		return n
	}
	return n.Add(j)
}

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// mayRunAs refuses p a schedule that would run on the host: with the
// Scheduler scripts switch off a schedule's firings run unconfined, which
// only the owner may ask for (schedules:host).
func (s *Scheduler) mayRunAs(p principal.Principal) error {
	if p.IsOwner() || s.e.Policy().SchedulerScript {
		return nil
	}
	return &principal.DeniedError{Principal: p, Scope: principal.SchedulesHost, What: "a schedule whose firings run on the host (the Scheduler scripts switch is off, so they would run with no sandbox)"}
}

// changesWhatRuns reports whether spec changes what a schedule runs or
// how (not only when, or whether it is paused).
func changesWhatRuns(spec Spec) bool {
	return spec.Language != nil || spec.Code != nil || spec.Env != nil || spec.TimeoutMs != nil || spec.Network != nil
}

// visible returns a *app.NotFoundError when ctx's principal may not see
// the schedule id (another tenant's answers as an unknown id would).
func (s *Scheduler) visible(ctx context.Context, id string) error {
	p := principal.Of(ctx)
	s.mu.Lock()
	en, ok := s.entries[id]
	s.mu.Unlock()
	if !ok || !p.Sees(en.s.Tenant) {
		return &app.NotFoundError{Kind: "schedule", ID: id, CrossTenant: ok}
	}
	return nil
}

// DefaultMaxSchedules bounds the schedules the engine holds (an agent
// could otherwise store them without end; each may fire every minute).
// It leaves room for the 1,000 that TestBenchSchedules measures the
// scheduler with (the daemon's idle CPU and firing lateness).
const DefaultMaxSchedules = 1024

// Create validates and stores a new schedule and returns it with notes on
// what the exec policy will do to its runs.
func (s *Scheduler) Create(ctx context.Context, spec Spec) (*View, []string, error) {
	sched, expr, err := apply(Schedule{}, spec, true)
	if err != nil {
		return nil, nil, err
	}
	p := principal.Of(ctx)
	if err := s.mayRunAs(p); err != nil {
		return nil, nil, err
	}
	sched.Tenant, sched.By = p.Tenant, p.Label()
	s.mu.Lock()
	n := len(s.entries)
	s.mu.Unlock()
	if n >= s.max {
		return nil, nil, &app.LimitError{Reason: fmt.Sprintf("refused: the engine holds %d schedules, the most it allows; remove schedules you no longer need (senclaw schedule rm ID)", n)}
	}
	now := s.clock.Now()
	sched.ID = newID()
	sched.CreatedAt, sched.UpdatedAt = now.UTC(), now.UTC()
	if err := s.e.PutSchedule(sched.ID, doc{Schedule: sched, Through: now, History: []Firing{}}); err != nil {
		return nil, nil, err
	}
	en := &entry{s: sched, expr: expr, through: now}
	s.mu.Lock()
	en.next = s.nextOf(en, now)
	s.entries[sched.ID] = en
	v := s.viewLocked(en, true)
	s.mu.Unlock()
	s.poke()
	s.log.Info("A schedule was created.", "schedule", sched.ID, "name", sched.Name, "cron", sched.Cron)
	return &v, Notes(sched, s.e.Policy()), nil
}

// Update changes a schedule; the same checks as on create apply, and on
// any error nothing changes. The times before the change are not counted
// as missed.
func (s *Scheduler) Update(ctx context.Context, id string, spec Spec) (*View, []string, error) {
	p := principal.Of(ctx)
	s.mu.Lock()
	en, ok := s.entries[id]
	var base Schedule
	if ok {
		base = en.s
	}
	s.mu.Unlock()
	if !ok || !p.Sees(base.Tenant) {
		return nil, nil, &app.NotFoundError{Kind: "schedule", ID: id, CrossTenant: ok}
	}
	sched, expr, err := apply(base, spec, false)
	if err != nil {
		return nil, nil, err
	}
	// While firings run on the host, no one but the owner changes a
	// schedule at all: not its code, nor when (or whether) the owner's
	// own code fires there.
	if err := s.mayRunAs(p); err != nil {
		return nil, nil, err
	}
	if changesWhatRuns(spec) {
		sched.By = p.Label()
	}
	now := s.clock.Now()
	sched.UpdatedAt = now.UTC()
	err = s.e.EditSchedule(id, func(data []byte) ([]byte, error) {
		var d doc
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, err
		}
		d.Schedule, d.Through = sched, now
		return json.Marshal(d)
	})
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if en, ok = s.entries[id]; !ok {
		s.mu.Unlock()
		return nil, nil, &app.NotFoundError{Kind: "schedule", ID: id}
	}
	en.s, en.expr, en.through = sched, expr, now
	en.next = s.nextOf(en, now)
	v := s.viewLocked(en, true)
	s.mu.Unlock()
	s.poke()
	return &v, Notes(sched, s.e.Policy()), nil
}

// Pause stops a schedule firing on its own; Resume starts it again from
// now (the times in between are not missed, they were paused).
func (s *Scheduler) Pause(ctx context.Context, id string) (*View, error) {
	v, _, err := s.Update(ctx, id, Spec{Paused: new(true)})
	return v, err
}

// Resume undoes Pause.
func (s *Scheduler) Resume(ctx context.Context, id string) (*View, error) {
	v, _, err := s.Update(ctx, id, Spec{Paused: new(false)})
	return v, err
}

// Delete removes a schedule; a run of it still going goes on and is
// recorded.
func (s *Scheduler) Delete(ctx context.Context, id string) error {
	if err := s.visible(ctx, id); err != nil {
		return err
	}
	if err := s.e.DeleteSchedule(id); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.entries, id)
	s.mu.Unlock()
	s.poke()
	return nil
}

// Resolve returns the id of the schedule idOrName: an id, or a name
// that one schedule alone has (sandboxes and apps take names too). An
// unknown one comes back as it is, for the caller's not found.
func (s *Scheduler) Resolve(idOrName string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[idOrName]; ok {
		return idOrName, nil
	}
	var ids []string
	for id, en := range s.entries {
		if en.s.Name == idOrName {
			ids = append(ids, id)
		}
	}
	switch len(ids) {
	case 0:
		return idOrName, nil
	case 1:
		return ids[0], nil
	}
	slices.Sort(ids)
	return "", &app.ConflictError{Reason: fmt.Sprintf("%d schedules are named %q (%s): give the id (senclaw schedule ls)", len(ids), idOrName, strings.Join(ids, ", "))}
}

// Get returns one schedule with its code.
func (s *Scheduler) Get(ctx context.Context, id string) (*View, error) {
	p := principal.Of(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	en, ok := s.entries[id]
	if !ok || !p.Sees(en.s.Tenant) {
		return nil, &app.NotFoundError{Kind: "schedule", ID: id, CrossTenant: ok}
	}
	v := s.viewLocked(en, true)
	return &v, nil
}

// List returns the schedules ctx's principal sees (the owner: those of
// tenant, every tenant's when it is "*"), by name, without their code.
func (s *Scheduler) List(ctx context.Context, tenant string) []View {
	p := principal.Of(ctx)
	if !p.IsOwner() {
		tenant = p.Tenant
	}
	s.mu.Lock()
	out := make([]View, 0, len(s.entries))
	for _, en := range s.entries {
		if tenant == "*" || en.s.Tenant == tenant {
			out = append(out, s.viewLocked(en, false))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b View) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func (s *Scheduler) viewLocked(en *entry, withCode bool) View {
	v := View{ScheduleConfig: en.s, Description: Describe(en.s.Cron), Zone: zoneName(en.s, s.clock.Now()), Summary: summary(en.s.Code), Running: en.running}
	if !withCode {
		v.Code = ""
	}
	if !en.next.IsZero() {
		next := en.next
		v.NextRun = &next
	}
	if en.running {
		v.LastRun = &Firing{At: en.since, Trigger: en.trigger, Outcome: OutcomeRunning, StartedAt: en.since}
	} else if en.last != nil {
		last := *en.last
		v.LastRun = &last
	}
	return v
}

// History returns up to limit entries of a schedule's history, newest
// first, a run still going at the top.
func (s *Scheduler) History(ctx context.Context, id string, limit int) ([]Firing, error) {
	if err := s.visible(ctx, id); err != nil {
		return nil, err
	}
	var d doc
	if err := s.e.GetSchedule(id, &d); err != nil {
		return nil, err
	}
	out := []Firing{}
	s.mu.Lock()
	if en, ok := s.entries[id]; ok && en.running {
		out = append(out, Firing{At: en.since, Trigger: en.trigger, Outcome: OutcomeRunning, StartedAt: en.since})
	}
	s.mu.Unlock()
	out = append(out, d.History...)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
