package app

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/store"
)

// SchedulerDeadline bounds a scheduled script: its default and its
// largest timeout.
const SchedulerDeadline = 600 * time.Second

// ScheduledRun is one firing of a schedule, what app/scheduler hands the
// runner.
type ScheduledRun struct {
	// ScheduleID and Name say which schedule fired; the run's record
	// keeps the id and its one-shot sandbox is named after the schedule.
	ScheduleID string
	Name       string
	// Language is bash (a script), python or node; "" means bash.
	Language string
	Code     string
	Env      map[string]string
	// TimeoutMs is 0 for SchedulerDeadline, else 1 s to SchedulerDeadline.
	TimeoutMs int
	// Network: the schedule wants the network. With the Scheduler
	// scripts switch on it gets it only when the policy's Scheduler
	// network allows it too; a schedule that wants it when the policy
	// does not is refused rather than run without.
	Network bool
	// Tenant owns the schedule; By last gave it what it runs
	// (principal.Label; empty is the owner). With the Scheduler scripts
	// switch off only the owner's schedules run (on the host); anyone
	// else's is refused.
	Tenant, By string
}

// ByOwner reports whether the owner gave the schedule what it runs.
func (r *ScheduledRun) ByOwner() bool { return r.By == "" || r.By == "owner" }

// Check validates r the way SchedulerScript will, so that a schedule can
// be refused when it is saved rather than at its first firing. It
// resolves the language's aliases (py, js, sh).
func (r *ScheduledRun) Check() error {
	if strings.TrimSpace(r.Language) == "" {
		r.Language = "bash"
	}
	lang, ok := languageAliases[strings.ToLower(strings.TrimSpace(r.Language))]
	if !ok {
		return badField("language", r.Language, "unknown language: use %s", strings.Join(Languages(), ", "))
	}
	r.Language = lang
	if strings.TrimSpace(r.Code) == "" {
		return badField("code", "", "is empty: give the script or the code to run")
	}
	if len(r.Code) > MaxCodeBytes {
		return badField("code", nil, "is larger than %d MiB", MaxCodeBytes>>20)
	}
	if err := checkEnv("env", r.Env); err != nil {
		return err
	}
	if r.TimeoutMs != 0 {
		if r.TimeoutMs < MinTimeoutMs || r.TimeoutMs > int(SchedulerDeadline/time.Millisecond) {
			return badField("timeoutMs", r.TimeoutMs, "must be from %d to %d ms (a scheduled script may run for 10 minutes at most)", MinTimeoutMs, int(SchedulerDeadline/time.Millisecond))
		}
	}
	return nil
}

// SchedulerScript runs one firing of a schedule through the single gate
// with source scheduler. With the Scheduler scripts switch off it runs
// directly on the host (recorded as "none"); on, in a one-shot sandbox
// whose network is the schedule's wish and the policy's Scheduler network
// together (both must say yes: network is off unless asked for, and a
// wish the policy forbids is refused, never quietly granted). With the
// switch on and nothing that can isolate, the run is refused and
// recorded, never run unconfined. The Run Python and Run Node switches
// apply as on every path.
func (e *Engine) SchedulerScript(ctx context.Context, r ScheduledRun) (*RunResult, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	if _, err := e.ownerPolicyFresh(); err != nil {
		return nil, asRefusal(err)
	}
	if !r.ByOwner() {
		// The firing is its maker's, whose record it is.
		ctx = principal.With(ctx, principal.FromLabel(r.By, r.Tenant))
	}
	pol := e.Policy()
	timeout := r.TimeoutMs
	if timeout == 0 {
		timeout = int(SchedulerDeadline / time.Millisecond)
	}
	cfg := SandboxConfig{TimeoutMs: &timeout}
	if pol.SchedulerScript {
		network := r.Network && pol.SchedulerNetwork
		cfg.Network = &network
	}
	sb, err := e.newSandbox(cfg)
	if err != nil {
		return nil, err
	}
	sb.Kind, sb.Name, sb.Tenant = "oneshot", "schedule:"+r.Name, r.Tenant
	if !pol.SchedulerScript {
		// The host's network is there whatever the schedule wants; the
		// record keeps the wish, and the direct backend's note says that
		// nothing is enforced.
		sb.Network = r.Network
		sb.Name += " (direct)"
	}
	if pol.SchedulerScript {
		// Sandboxed, it runs as a uid of its own; switched off, as the
		// engine's user, so it takes none.
		if err := e.takeUID(&sb); err != nil {
			return nil, err
		}
	}
	defer e.purgeWorkspace(&sb)
	p, err := e.planFor(&sb, RunRequest{Source: SourceScheduler, ScheduleID: r.ScheduleID, Language: r.Language, Code: r.Code, Env: r.Env, TimeoutMs: r.TimeoutMs})
	if err != nil {
		return nil, err
	}
	p.kind, p.offPath, p.newWorkspace = "oneshot", !pol.SchedulerScript, true
	// On the off path the tenant host policy asks who made the schedule.
	by := principal.FromLabel(r.By, r.Tenant)
	p.by = &by
	if p.offPath {
		e.boundHostRun(ctx, p)
	}
	if pol.SchedulerScript && r.Network && !pol.SchedulerNetwork {
		p.refusal = refused("this schedule wants the network and Scheduler network is off in the exec policy; turn schedulerNetwork on, or turn the schedule's network off")
	}
	return e.run(ctx, p)
}

// PutSchedule stores a schedule's document; app/scheduler owns its shape.
func (e *Engine) PutSchedule(id string, v any) error { return e.store.PutSchedule(id, v) }

// GetSchedule decodes the schedule id into v; an unknown id is a
// *NotFoundError.
func (e *Engine) GetSchedule(id string, v any) error {
	return scheduleErr(id, e.store.GetSchedule(id, v))
}

// EditSchedule changes the stored document of id in one transaction; an
// unknown id is a *NotFoundError.
func (e *Engine) EditSchedule(id string, edit func(data []byte) ([]byte, error)) error {
	return scheduleErr(id, e.store.EditSchedule(id, edit))
}

// DeleteSchedule removes the schedule's document; an unknown id is a
// *NotFoundError.
func (e *Engine) DeleteSchedule(id string) error {
	return scheduleErr(id, e.store.DeleteSchedule(id))
}

// EachSchedule calls fn with every stored schedule document.
func (e *Engine) EachSchedule(fn func(data []byte) error) error { return e.store.EachSchedule(fn) }

func scheduleErr(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &NotFoundError{Kind: "schedule", ID: id}
	}
	return err
}
