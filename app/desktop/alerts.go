package desktop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/safetext"
	"github.com/senclaw/sandbox/backends"
)

// Kind is a kind of notification; each kind is rate-limited on its own.
type Kind string

// The kinds of notification.
const (
	// KindIsolation: what the machine can isolate with changed.
	KindIsolation Kind = "isolation"
	// KindRefused: runs were refused because nothing can isolate.
	KindRefused Kind = "refused"
	// KindAppRestart: a Space App needs a restart to run under its saved
	// configuration.
	KindAppRestart Kind = "app-restart"
)

// Notification is one desktop notification.
type Notification struct {
	Kind    Kind
	Summary string
	Body    string
	// Critical asks the notification server to keep it on screen.
	Critical bool
	// Icon is the level whose tray icon the notification shows.
	Icon Level
}

// refusedNoIsolation starts the isolation of a run that a switch sent to a
// sandbox when nothing could isolate.
const refusedNoIsolation = "refused: no isolation"

// alerts turns successive snapshots into notifications. It remembers what
// the user was last told, not what the last poll saw: a change that a rate
// limit held back is told at the next poll it is allowed, and a change that
// undid itself in between is not told at all.
type alerts struct {
	told      *app.Capabilities // the capabilities last notified about
	seenRuns  map[string]bool   // ids of runs already looked at
	refused   []app.RunRecord   // refused runs not yet told
	appsTold  []string          // apps needing restart last notified about
	appsReady bool
	scheduled scheduleAlerts // alerts_schedule.go (issue #16)
}

// update returns the notifications snapshot s calls for. allow says
// whether a kind may be sent now; what it holds back stays pending.
func (a *alerts) update(s Snapshot, allow func(Kind) bool) []Notification {
	if s.Err != nil {
		return nil
	}
	var out []Notification
	if s.Caps != nil {
		if a.told == nil {
			a.told = s.Caps
		} else if n, changed := isolationChange(a.told, s.Caps); !changed {
			a.told = s.Caps
		} else if allow(KindIsolation) {
			out = append(out, n)
			a.told = s.Caps
		}
	}
	if s.Runs != nil {
		first := a.seenRuns == nil
		seen := make(map[string]bool, len(s.Runs))
		for _, r := range s.Runs {
			seen[r.ID] = true
			// A scheduled run is told by its own kind (alerts_schedule.go).
			if !first && !a.seenRuns[r.ID] && strings.HasPrefix(r.Isolation, refusedNoIsolation) && r.Source != app.SourceScheduler {
				a.refused = append(a.refused, r)
			}
		}
		// Only the polled window is kept: a run that left it never comes
		// back into it.
		a.seenRuns = seen
	}
	if len(a.refused) > 0 && allow(KindRefused) {
		out = append(out, refusedNotification(a.refused))
		a.refused = nil
	}
	out = append(out, a.scheduled.update(s.ScheduledRuns, allow)...)
	if !a.appsReady {
		a.appsTold, a.appsReady = s.AppsNeedingRestart, true
	} else if fresh := newNames(a.appsTold, s.AppsNeedingRestart); len(fresh) == 0 {
		a.appsTold = s.AppsNeedingRestart
	} else if allow(KindAppRestart) {
		out = append(out, appRestartNotification(fresh))
		a.appsTold = s.AppsNeedingRestart
	}
	return out
}

// isolationChange describes how the isolating backends that work changed
// from old to cur.
func isolationChange(old, cur *app.Capabilities) (Notification, bool) {
	was, now := usableIsolating(old), usableIsolating(cur)
	var lost, back []string
	for name := range was {
		if _, ok := now[name]; !ok {
			lost = append(lost, name)
		}
	}
	for name := range now {
		if _, ok := was[name]; !ok {
			back = append(back, name)
		}
	}
	if len(lost) == 0 && len(back) == 0 && old.State == cur.State {
		return Notification{}, false
	}
	slices.Sort(lost)
	slices.Sort(back)
	n := Notification{Kind: KindIsolation, Icon: LevelAttention}
	switch {
	case old.State == app.Isolated && cur.State != app.Isolated:
		n.Summary = "Isolation lost: nothing can isolate"
		if len(lost) > 0 {
			n.Summary = "Isolation lost: " + joinAnd(lost) + " stopped working"
		}
		n.Critical = true
	case old.State != app.Isolated && cur.State == app.Isolated:
		n.Summary = "Isolation is back: code runs in " + cur.Recommended + " sandboxes"
		n.Icon = LevelIsolated
	case len(lost) > 0:
		n.Summary = joinAnd(lost) + " stopped working"
	default:
		n.Summary = joinAnd(back) + " " + verb(back, "works", "work") + " again"
		n.Icon = LevelIsolated
	}
	var body []string
	for _, name := range lost {
		body = append(body, name+": "+reasonOf(cur, name))
	}
	body = append(body, cur.Summary)
	n.Body = strings.Join(body, "\n")
	return n, true
}

func reasonOf(c *app.Capabilities, name string) string {
	for _, b := range c.Backends {
		if b.Backend == name {
			if b.Reason != "" {
				return b.Reason
			}
			return string(b.State)
		}
	}
	return string(backends.NeverSeen)
}

func refusedNotification(runs []app.RunRecord) Notification {
	n := Notification{Kind: KindRefused, Critical: true, Icon: LevelAttention}
	if len(runs) == 1 {
		n.Summary = "A run was refused: nothing can isolate"
	} else {
		n.Summary = fmt.Sprintf("%d runs were refused: nothing can isolate", len(runs))
	}
	var lines []string
	for i, r := range runs {
		if i == 3 {
			lines = append(lines, fmt.Sprintf("and %d more", len(runs)-i))
			break
		}
		what := r.Command
		if what == "" {
			what = r.Language + " code"
		}
		// The command is an agent's: its text stays text (safetext).
		lines = append(lines, safetext.Escape(r.Source+": "+shorten(what, 60)))
	}
	lines = append(lines, "A switch asks for a sandbox and no backend works; see the dashboard.")
	n.Body = strings.Join(lines, "\n")
	return n
}

// appRestartNotification is the notification for Space Apps that need a
// restart to run under their saved configuration.
func appRestartNotification(apps []string) Notification {
	n := Notification{Kind: KindAppRestart, Icon: LevelAttention}
	apps = slices.Clone(apps)
	for i, a := range apps {
		apps[i] = safetext.Escape(a) // a manifest's name: the app's author chose it
	}
	if len(apps) == 1 {
		n.Summary = "Space App " + apps[0] + " needs a restart"
	} else {
		n.Summary = fmt.Sprintf("%d Space Apps need a restart", len(apps))
	}
	n.Body = "What " + joinAnd(apps) + " " + verb(apps, "runs", "run") + " under differs from the saved configuration; restart from the dashboard to apply it."
	return n
}

// newNames returns the names in cur that are not in old.
func newNames(old, cur []string) []string {
	var fresh []string
	for _, n := range cur {
		if !slices.Contains(old, n) {
			fresh = append(fresh, n)
		}
	}
	return fresh
}

func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return "isolation"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func verb(names []string, one, many string) string {
	if len(names) == 1 {
		return one
	}
	return many
}

func shorten(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}
