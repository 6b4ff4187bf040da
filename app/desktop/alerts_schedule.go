package desktop

import (
	"fmt"
	"strings"

	"github.com/senclaw/sandbox/app"
)

// KindScheduled: a scheduled script failed or was refused.
const KindScheduled Kind = "scheduled"

// scheduleAlerts tells about scheduled runs that did not succeed: a
// failure (exit code, timeout, kill) or a refusal (nothing could isolate,
// or a switch forbids it). Like the refused runs, the first snapshot is
// the baseline and what a rate limit holds back is told together later.
type scheduleAlerts struct {
	seen    map[string]bool
	pending []app.RunRecord
}

func (a *scheduleAlerts) update(runs []app.RunRecord, allow func(Kind) bool) []Notification {
	if runs != nil {
		first := a.seen == nil
		seen := make(map[string]bool, len(runs))
		for _, r := range runs {
			if r.State == "running" {
				continue // told, if need be, once it is done
			}
			seen[r.ID] = true
			if !first && !a.seen[r.ID] && !r.OK() {
				a.pending = append(a.pending, r)
			}
		}
		a.seen = seen
	}
	if len(a.pending) == 0 || !allow(KindScheduled) {
		return nil
	}
	n := scheduledNotification(a.pending)
	a.pending = nil
	return []Notification{n}
}

func scheduledNotification(runs []app.RunRecord) Notification {
	n := Notification{Kind: KindScheduled, Icon: LevelAttention}
	if len(runs) == 1 {
		verb := "failed"
		if strings.HasPrefix(runs[0].Isolation, "refused") {
			verb, n.Critical = "was refused", true
		}
		n.Summary = fmt.Sprintf("Scheduled script %q %s", scheduleName(runs[0]), verb)
	} else {
		n.Summary = fmt.Sprintf("%d scheduled runs did not succeed", len(runs))
	}
	var lines []string
	for i, r := range runs {
		if i == 3 {
			lines = append(lines, fmt.Sprintf("and %d more", len(runs)-i))
			break
		}
		if strings.HasPrefix(r.Isolation, "refused") {
			n.Critical = true
		}
		lines = append(lines, scheduleName(r)+": "+shorten(whyNotOK(r), 80))
	}
	lines = append(lines, "See its history: senclaw schedule history, or the dashboard's Scheduled scripts.")
	n.Body = strings.Join(lines, "\n")
	return n
}

// scheduleName is the schedule's name as its run's sandbox carries it.
func scheduleName(r app.RunRecord) string {
	name := strings.TrimSuffix(strings.TrimPrefix(r.SandboxName, "schedule:"), " (direct)")
	if name == "" {
		return r.ScheduleID
	}
	return name
}

func whyNotOK(r app.RunRecord) string {
	switch {
	case strings.HasPrefix(r.Isolation, "refused"):
		return r.Isolation
	case r.TimedOut:
		return fmt.Sprintf("timed out after %d s (isolation %s)", r.DurationMs/1000, r.Isolation)
	case r.Killed != "":
		return "killed: " + r.Killed
	case r.ExitCode != nil:
		return fmt.Sprintf("exited with %d (isolation %s)", *r.ExitCode, r.Isolation)
	}
	return r.Error
}
