package scheduler

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/safetext"
)

// Missed-run policies: what happens to the times a schedule should have
// fired while the engine was not running (or the machine slept).
const (
	// MissedSkip forgets them (the history says how many); the default.
	MissedSkip = "skip"
	// MissedOnce runs one catch-up at once, for the latest of them.
	MissedOnce = "once"
)

// MaxJitterSec bounds a schedule's jitter.
const MaxJitterSec = 3600

// doc is a schedule's stored document: the schedule and what the
// scheduler keeps of it.
type doc struct {
	Schedule
	// Through: every time the schedule was due up to this instant has
	// been fired, skipped or counted as missed.
	Through time.Time `json:"through"`
	// History is newest first, at most maxHistory entries.
	History []Firing `json:"history"`
}

const maxHistory = 50

// apply validates spec onto a copy of s. Create and update share it, so
// that the same input is judged the same way.
func apply(s Schedule, spec Spec, create bool) (Schedule, *Expr, error) {
	if spec.Name != nil || create {
		name := strings.TrimSpace(deref(spec.Name))
		if _, printable := safetext.Valid(name); name == "" || utf8.RuneCountInString(name) > 100 || !printable {
			// The name reaches terminals, notifications and the dashboard:
			// the policy of sandbox names (no C1 CSI, bidi overrides, NEL).
			return s, nil, &app.FieldError{Field: "name", Value: name, Reason: "must be 1 to 100 characters: " + safetext.Policy}
		}
		s.Name = name
	}
	if spec.Cron != nil || create {
		s.Cron = strings.Join(strings.Fields(deref(spec.Cron)), " ")
	}
	if spec.TimeZone != nil {
		s.TimeZone = strings.TrimSpace(*spec.TimeZone)
		if s.TimeZone == "Local" || s.TimeZone == "local" {
			s.TimeZone = ""
		}
	}
	expr, err := ParseExpr(s.Cron, s.TimeZone)
	if err != nil {
		return s, nil, err
	}
	if spec.Language != nil {
		s.Language = *spec.Language
	}
	if spec.Code != nil {
		s.Code = *spec.Code
	}
	if spec.Env != nil {
		s.Env = spec.Env
	}
	if spec.TimeoutMs != nil {
		s.TimeoutMs = *spec.TimeoutMs
	}
	if s.TimeoutMs == 0 {
		s.TimeoutMs = int(app.SchedulerDeadline / time.Millisecond)
	}
	run := scheduledRun(&s)
	if err := run.Check(); err != nil {
		return s, nil, err
	}
	s.Language = run.Language
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	if spec.Network != nil {
		s.Network = *spec.Network
	}
	if spec.Paused != nil {
		s.Paused = *spec.Paused
	}
	if spec.Missed != nil {
		s.Missed = *spec.Missed
	}
	switch s.Missed {
	case "":
		s.Missed = MissedSkip
	case MissedSkip, MissedOnce:
	default:
		return s, nil, &app.FieldError{Field: "missed", Value: s.Missed, Reason: "must be skip (forget the times missed while the engine was not running) or once (run one catch-up at start)"}
	}
	if spec.JitterSec != nil {
		s.JitterSec = *spec.JitterSec
	}
	if s.JitterSec < 0 || s.JitterSec > MaxJitterSec {
		return s, nil, &app.FieldError{Field: "jitterSec", Value: s.JitterSec, Reason: fmt.Sprintf("must be from 0 to %d seconds", MaxJitterSec)}
	}
	return s, expr, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// scheduledRun is what the runner gets for one firing of s.
func scheduledRun(s *Schedule) app.ScheduledRun {
	return app.ScheduledRun{ScheduleID: s.ID, Name: s.Name, Language: s.Language, Code: s.Code, Env: s.Env, TimeoutMs: s.TimeoutMs, Network: s.Network, Tenant: s.Tenant, By: s.By}
}

// jitter is the fixed delay of each of s's firings.
func jitter(s *Schedule) time.Duration {
	if s.JitterSec <= 0 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(s.ID))
	return time.Duration(h.Sum32()%uint32(s.JitterSec*1000)) * time.Millisecond
}

// Notes say, in words, what the exec policy will do to s's runs.
func Notes(s Schedule, pol app.ExecPolicy) []string {
	var notes []string
	switch {
	case s.Language == "python" && !pol.RunPython:
		notes = append(notes, "Run Python is off: this schedule's runs are refused until it is on")
	case s.Language == "node" && !pol.RunNode:
		notes = append(notes, "Run Node is off: this schedule's runs are refused until it is on")
	}
	switch {
	case !pol.SchedulerScript:
		notes = append(notes, "Scheduler scripts is off: this schedule runs directly on the host, with no isolation (recorded as none)")
	case s.Network && !pol.SchedulerNetwork:
		notes = append(notes, "the schedule wants the network and Scheduler network is off: its runs are refused until one of them changes")
	}
	return notes
}

// summary is the first line of code, shortened.
func summary(code string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(code), "\n")
	if r := []rune(line); len(r) > 120 {
		line = string(r[:119]) + "…"
	}
	return line
}

// zoneName is the name of the zone a schedule is read in.
func zoneName(s Schedule, now time.Time) string {
	if s.TimeZone != "" {
		return s.TimeZone
	}
	abbr, _ := now.In(time.Local).Zone()
	if name := time.Local.String(); name != "Local" {
		return name
	}
	return "local (" + abbr + ")"
}
