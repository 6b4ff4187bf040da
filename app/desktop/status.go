package desktop

import (
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/autostart"
	"github.com/senclaw/sandbox/backends"
)

// Level is what the tray icon shows.
type Level string

// The tray's levels.
const (
	// LevelIsolated: code runs isolated.
	LevelIsolated Level = "isolated"
	// LevelDegraded: nothing can isolate, and no switch asks for it.
	LevelDegraded Level = "degraded"
	// LevelAttention: a switch asks for isolation that nothing can give
	// (those runs are refused), a backend stopped working, or the engine
	// does not answer.
	LevelAttention Level = "attention"
)

// Snapshot is what one poll of the engine saw.
type Snapshot struct {
	Policy *app.ExecPolicy
	Caps   *app.Capabilities
	// Runs are the most recent run records, newest first.
	Runs []app.RunRecord
	// ScheduledRuns are the most recent runs the scheduler fired.
	ScheduledRuns []app.RunRecord
	// Notifications is the engine's "notifications" setting when the
	// engine has one, else nil.
	Notifications *bool
	// Apps are the Space Apps that want attention: they need a restart
	// (what their running process got differs from their saved
	// configuration) or they gave up (crash-looping).
	Apps []AppAlert
	// StartAtLogin is the owner's login autostart entry as it is on
	// disk; nil when the daemon cannot manage one.
	StartAtLogin *autostart.State
	// Err is set when the engine did not answer.
	Err error
}

// AppAlert is a Space App that wants attention.
type AppAlert struct {
	ID, Name string
	// NeedsRestart and Reason: what it runs with differs from its saved
	// configuration, and how ("configured with a sandbox, running
	// without one").
	NeedsRestart bool
	Reason       string
	// CrashLooping: it failed too often and is no longer restarted;
	// LastLog are its log's last lines.
	CrashLooping bool
	LastLog      []string
}

// Status is what the tray shows for a snapshot.
type Status struct {
	Level Level
	// Text says the level in one sentence (the tray's tooltip and the
	// menu's first line).
	Text string
}

// switchesOn names the enforcement switches that are on.
func switchesOn(p *app.ExecPolicy) []string {
	if p == nil {
		return nil
	}
	var on []string
	for _, sw := range policySwitches() {
		if sw.get(p) {
			on = append(on, sw.label)
		}
	}
	return on
}

// statusOf derives the tray's status from a snapshot.
func statusOf(s Snapshot) Status {
	if s.Err != nil || s.Caps == nil {
		why := "no answer"
		if s.Err != nil {
			why = s.Err.Error()
		}
		return Status{LevelAttention, "The engine does not answer: " + why}
	}
	if gone := goneBackends(s.Caps); len(gone) > 0 {
		text := strings.Join(gone, ", ") + " stopped working."
		if s.Caps.State == app.Isolated {
			text += " Code still runs isolated with " + s.Caps.Recommended + "."
		}
		return Status{LevelAttention, text}
	}
	if text := appsAttention(s.Apps); text != "" {
		return Status{LevelAttention, text}
	}
	if s.Caps.State == app.Isolated {
		return Status{LevelIsolated, "Isolated: code runs in " + s.Caps.Recommended + " sandboxes."}
	}
	if on := switchesOn(s.Policy); len(on) > 0 {
		return Status{LevelAttention, "Nothing can isolate, so runs under " + strings.Join(on, ", ") + " are refused."}
	}
	return Status{LevelDegraded, "Degraded: nothing can isolate; every enforcement switch is off."}
}

// goneBackends names the isolating backends that worked earlier in the
// engine's life and stopped.
func goneBackends(c *app.Capabilities) []string {
	var gone []string
	for _, b := range c.Backends {
		if b.Isolates && b.State == backends.SeenGone {
			gone = append(gone, b.Backend)
		}
	}
	return gone
}

// usableIsolating is the set of isolating backends that work.
func usableIsolating(c *app.Capabilities) map[string]backends.Capability {
	m := map[string]backends.Capability{}
	for _, b := range c.Backends {
		if b.Isolates && b.Usable() {
			m[b.Backend] = b
		}
	}
	return m
}

// appsAttention says which Space Apps want attention, "" when none.
func appsAttention(apps []AppAlert) string {
	var restart, looping []string
	for _, a := range apps {
		if a.CrashLooping {
			looping = append(looping, plainName(a.Name))
		} else if a.NeedsRestart {
			restart = append(restart, plainName(a.Name))
		}
	}
	var parts []string
	if len(restart) > 0 {
		parts = append(parts, "Space App "+joinAnd(restart)+" "+verb(restart, "needs", "need")+" a restart")
	}
	if len(looping) > 0 {
		parts = append(parts, "Space App "+joinAnd(looping)+" "+verb(looping, "is", "are")+" crash-looping")
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "."
}
