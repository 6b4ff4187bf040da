package apitype

import "time"

// ScheduleReply is what create and update answer: the schedule, and what
// the exec policy will do to its runs, in words.
type ScheduleReply struct {
	Schedule *Schedule `json:"schedule"`
	Note     string    `json:"note,omitempty"`
}

// ScheduleConfig is what a schedule is: what it runs, when, and how.
type ScheduleConfig struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Cron is the expression: five fields, or @hourly, @daily, @every 90s.
	Cron string `json:"cron"`
	// TimeZone is an IANA zone name; "" is the engine's local zone.
	TimeZone string `json:"timeZone"`
	// Language is bash (a script), python or node; Code is what it runs.
	Language  string            `json:"language"`
	Code      string            `json:"code,omitempty"`
	Env       map[string]string `json:"env"`
	TimeoutMs int               `json:"timeoutMs"`
	// Network: the schedule wants the network; with the Scheduler
	// scripts switch on it needs the policy's Scheduler network too.
	Network bool `json:"network"`
	// Paused schedules do not fire on their own (run now still works).
	Paused bool `json:"paused"`
	// Missed is MissedSkip or MissedOnce.
	Missed string `json:"missed"`
	// JitterSec delays each firing by a fixed share of it (0 to
	// JitterSec seconds, from the id), so that schedules sharing a
	// minute do not all start at once, and each keeps a steady rhythm.
	JitterSec int `json:"jitterSec"`
	// Tenant is the slug of the tenant that owns the schedule; empty is
	// the owner's own (the master tenant).
	Tenant string `json:"tenant"`
	// By is who last gave the schedule what it runs (principal.Label:
	// owner, agent:NAME, tenant:NAME); empty, in a schedule saved before
	// principals, is the owner. Only the owner's schedules ever run on
	// the host.
	By        string    `json:"by"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ScheduleSpec is what a caller gives on create and update. Nil means
// "not given": the default on create, unchanged on update.
type ScheduleSpec struct {
	Name      *string           `json:"name,omitempty"`
	Cron      *string           `json:"cron,omitempty"`
	TimeZone  *string           `json:"timeZone,omitempty"`
	Language  *string           `json:"language,omitempty"`
	Code      *string           `json:"code,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	TimeoutMs *int              `json:"timeoutMs,omitempty"`
	Network   *bool             `json:"network,omitempty"`
	Paused    *bool             `json:"paused,omitempty"`
	Missed    *string           `json:"missed,omitempty"`
	JitterSec *int              `json:"jitterSec,omitempty"`
}

// Firing is one entry of a schedule's history.
type Firing struct {
	// At is the time the schedule was due (or run now was asked).
	At time.Time `json:"at"`
	// Trigger is "schedule", "catch-up" (missed policy once) or "manual".
	Trigger string `json:"trigger"`
	// Outcome is "ok", "failed", "refused" (nothing ran), "skipped" (the
	// previous run was still going), "missed" (the engine was not
	// running) or, for a run still going, "running".
	Outcome    string    `json:"outcome"`
	RunID      string    `json:"runId,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	ExitCode   *int      `json:"exitCode,omitempty"`
	Isolation  string    `json:"isolation,omitempty"`
	DurationMs int64     `json:"durationMs,omitempty"`
	// Reason says why, for anything but ok.
	Reason string `json:"reason,omitempty"`
	// Missed counts the times that were missed (outcome missed).
	Missed int `json:"missed,omitempty"`
}

// Firing outcomes.
const (
	OutcomeOK      = "ok"
	OutcomeFailed  = "failed"
	OutcomeRefused = "refused"
	OutcomeSkipped = "skipped"
	OutcomeMissed  = "missed"
	OutcomeRunning = "running"
)

// Schedule is a schedule as the faces show it.
type Schedule struct {
	ScheduleConfig
	// Description says the expression in words; Zone is the zone it is
	// read in (the engine's local one by name when TimeZone is empty).
	Description string `json:"description"`
	Zone        string `json:"zone"`
	// Summary is the first line of the code (lists leave the code out).
	Summary string `json:"summary"`
	// NextRun is when it fires next; nil when paused.
	NextRun *time.Time `json:"nextRun"`
	Running bool       `json:"running"`
	LastRun *Firing    `json:"lastRun"`
}
