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
	// KindAppGaveUp: a Space App failed too often and is no longer
	// restarted (crash-looping).
	KindAppGaveUp Kind = "app-gave-up"
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
	told     *app.Capabilities // the capabilities last notified about
	seenRuns map[string]bool   // ids of runs already judged (done ones)
	refused  []app.RunRecord   // refused runs not yet told
	// restartTold and gaveUpTold are the apps last told about (by id);
	// an app that leaves the state is forgotten, so coming back is news.
	restartTold map[string]bool
	gaveUpTold  map[string]bool
	appsReady   bool
	scheduled   scheduleAlerts // alerts_schedule.go
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
			if r.State == "running" {
				// Judged once it is done: a run is on disk as running
				// before its backend is chosen, so a refused one shows
				// first as running, with no isolation yet.
				continue
			}
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
	restart, gaveUp := map[string]bool{}, map[string]bool{}
	for _, ap := range s.Apps {
		switch {
		case ap.CrashLooping:
			gaveUp[ap.ID] = true
		case ap.NeedsRestart:
			restart[ap.ID] = true
		}
	}
	if !a.appsReady {
		// What was already so when the tray started is shown by the icon,
		// not told.
		a.restartTold, a.gaveUpTold, a.appsReady = restart, gaveUp, true
		return out
	}
	if n, ok := appsNews(s.Apps, a.restartTold, restart, false); !ok {
		a.restartTold = restart
	} else if allow(KindAppRestart) {
		out = append(out, n)
		a.restartTold = restart
	}
	if n, ok := appsNews(s.Apps, a.gaveUpTold, gaveUp, true); !ok {
		a.gaveUpTold = gaveUp
	} else if allow(KindAppGaveUp) {
		out = append(out, n)
		a.gaveUpTold = gaveUp
	}
	return out
}

// appsNews is the notification for the apps in cur that were not told
// about (a restart needed, or, with gaveUp, crash-looping); ok is false
// when there are none.
func appsNews(apps []AppAlert, told, cur map[string]bool, gaveUp bool) (Notification, bool) {
	var fresh []AppAlert
	for _, ap := range apps {
		if cur[ap.ID] && !told[ap.ID] {
			fresh = append(fresh, ap)
		}
	}
	if len(fresh) == 0 {
		return Notification{}, false
	}
	if gaveUp {
		return appGaveUpNotification(fresh), true
	}
	return appRestartNotification(fresh), true
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

// appRestartNotification is the notification for Space Apps that came to
// need a restart to run under their saved configuration. Names come from
// the apps' manifests: the summary keeps only plain characters of them,
// and the body (escaped for a server that reads markup) has them whole.
func appRestartNotification(apps []AppAlert) Notification {
	n := Notification{Kind: KindAppRestart, Icon: LevelAttention}
	if len(apps) == 1 {
		n.Summary = "Space App " + plainName(apps[0].Name) + " needs a restart"
	} else {
		n.Summary = fmt.Sprintf("%d Space Apps need a restart", len(apps))
	}
	var lines []string
	for _, ap := range apps {
		// A manifest's name: the app's author chose it (safetext).
		lines = append(lines, safetext.Escape(ap.Name)+": "+safetext.Escape(ap.Reason))
	}
	lines = append(lines, "Restart from the dashboard's Space Apps card to apply the saved configuration.")
	n.Body = strings.Join(lines, "\n")
	return n
}

// appGaveUpNotification is the notification for Space Apps that gave up.
func appGaveUpNotification(apps []AppAlert) Notification {
	n := Notification{Kind: KindAppGaveUp, Icon: LevelAttention}
	if len(apps) == 1 {
		n.Summary = "Space App " + plainName(apps[0].Name) + " gave up: crash-looping"
	} else {
		n.Summary = fmt.Sprintf("%d Space Apps gave up: crash-looping", len(apps))
	}
	var lines []string
	for _, ap := range apps {
		lines = append(lines, safetext.Escape(ap.Name)+" failed 5 times within 5 minutes and is no longer restarted.")
		log := ap.LastLog
		if len(log) > 3 {
			log = log[len(log)-3:]
		}
		for _, l := range log {
			lines = append(lines, "  "+safetext.Escape(shorten(l, 100))) // the app's own output
		}
	}
	lines = append(lines, "Fix it, then start it again from the dashboard.")
	n.Body = strings.Join(lines, "\n")
	return n
}

// plainName is an app's name for a summary (which servers show as it is):
// markup's <, > and & removed, at most 40 runes, escaped (safetext).
func plainName(name string) string {
	clean := strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '&' {
			return -1
		}
		return r
	}, name)
	return safetext.Escape(shorten(clean, 40))
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
