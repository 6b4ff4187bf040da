// Package doctor checks what the engine needs and what it left behind, and
// repairs what it can.
//
// It checks the engine's store, its data dir and the room on it, the sandbox
// user's way to the workspaces and the isolation tools, and says what to do
// for each. It repairs a damaged store (what can be read of it goes into a
// new file, the old one is kept) and removes leftovers no sandbox owns. It
// works without an engine too: a daemon whose store is damaged has none, and
// the doctor is what fixes it.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// Options configure a Doctor.
type Options struct {
	// Engine is the engine, nil when it could not start (EngineErr says
	// why).
	Engine    *app.Engine
	EngineErr error
	// DataDir is the engine's data dir (the store is senclaw.db in it).
	DataDir string
	// EUID is the engine's effective uid: a root engine's sandboxes run
	// as the sandbox user, who must reach the workspaces.
	EUID int
	// ConfigDir (the API token's) and RuntimeDir (the socket's) must be
	// the engine's own and closed to others; "" skips the check.
	ConfigDir, RuntimeDir string
	// Listen is the dashboard's configured address ("" for none): who
	// else listens on its port is reported.
	Listen string
}

// Doctor checks and repairs one engine.
type Doctor struct{ opts Options }

// New returns a Doctor.
func New(opts Options) *Doctor {
	if opts.Engine != nil {
		opts.DataDir = opts.Engine.DataDir()
	} else if abs, err := filepath.Abs(opts.DataDir); err == nil {
		opts.DataDir = abs
	}
	return &Doctor{opts: opts}
}

// Check statuses.
const (
	OK   = "ok"
	Warn = "warn"
	Fail = "fail"
)

// Check looks at everything and changes nothing.
func (d *Doctor) Check(ctx context.Context) *Report {
	r := &Report{Leftovers: []app.Leftover{}}
	add(r, d.checkStore())
	add(r, d.checkDataDir()...)
	add(r, d.checkConfigDir()...)
	add(r, d.checkRuntimeDir()...)
	add(r, d.checkPort()...)
	add(r, d.checkFreeSpace())
	if e := d.opts.Engine; e != nil {
		add(r, d.checkSandboxUser()...)
		add(r, checkIsolation(e.Capabilities(ctx, true))...)
		left, err := e.Leftovers(ctx, false)
		add(r, leftoverChecks(left, err)...)
		if left != nil {
			r.Leftovers = left
		}
	}
	return r
}

// Repair copies a damaged store into a new one (the daemon must then
// start again), or removes the leftovers no sandbox owns; then it checks
// again.
func (d *Doctor) Repair(ctx context.Context) (*Report, error) {
	var de *store.DamagedError
	if d.opts.Engine == nil {
		if !errors.As(d.opts.EngineErr, &de) {
			return nil, fmt.Errorf("the engine could not start and its store is not damaged (%v): nothing here can repair that; see the daemon's log", d.opts.EngineErr)
		}
		from := de.Kept
		if from == "" {
			from = de.Path
		}
		got, err := store.Repair(de.Path, from)
		if err != nil {
			return nil, err
		}
		line := salvageLine(got, de.Path)
		return &Report{OK: true, Restart: true, Leftovers: []app.Leftover{}, Repaired: []string{line},
			Checks: []Check{{Name: "store", Status: OK, Detail: "repaired; the daemon stops now and the next senclaw command starts it on the new store"}}}, nil
	}
	removed, err := d.opts.Engine.Leftovers(ctx, true)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range removed {
		switch {
		case l.Removed:
			lines = append(lines, fmt.Sprintf("removed the %s %s%s", l.Kind, l.What, of(l.Owner)))
		case l.Error != "":
			lines = append(lines, fmt.Sprintf("could not remove the %s %s: %s", l.Kind, l.What, l.Error))
		}
	}
	r := d.Check(ctx)
	r.Repaired = append(lines, r.Repaired...)
	if len(r.Repaired) == 0 {
		r.Repaired = []string{"nothing needed repairing"}
	}
	return r, nil
}

func add(r *Report, cs ...Check) {
	r.Checks = append(r.Checks, cs...)
	r.OK = true
	for _, c := range r.Checks {
		r.OK = r.OK && c.Status != Fail
	}
}

func of(owner string) string {
	if owner == "" {
		return ""
	}
	return " (of " + owner + ")"
}

// salvageLine says what Repair copied.
func salvageLine(s *store.Salvaged, path string) string {
	var parts []string
	names := make([]string, 0, len(s.Buckets))
	for n := range s.Buckets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := s.Buckets[n]
		p := fmt.Sprintf("%s %d", n, b.Copied)
		if b.Lost > 0 || b.Error != "" {
			p += fmt.Sprintf(" (%d unreadable", b.Lost)
			if b.Error != "" {
				p += ", and what a damaged page hid"
			}
			p += ")"
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("made a new store at %s from what could be read: %s; the damaged one is kept at %s", path, strings.Join(parts, ", "), s.Kept)
}

func (d *Doctor) storePath() string { return filepath.Join(d.opts.DataDir, "senclaw.db") }

func (d *Doctor) checkStore() Check {
	c := Check{Name: "store", Status: OK}
	if d.opts.Engine == nil {
		c.Status, c.Detail = Fail, errText(d.opts.EngineErr)
		var de *store.DamagedError
		if errors.As(d.opts.EngineErr, &de) {
			c.Fix = "senclaw doctor --repair: what can be read goes into a new store (the damaged file is kept aside), then the daemon starts again on it"
		} else {
			c.Fix = "see the daemon's log; senclaw stop, fix what it says, and run any senclaw command to start it again"
		}
		return c
	}
	if p := d.opts.Engine.CheckStore(); len(p) > 0 {
		c.Status, c.Detail = Fail, "the open store fails bbolt's check: "+strings.Join(p, "; ")
		c.Fix = "senclaw stop (the next start keeps a copy of the damaged file aside and says so), then senclaw doctor --repair"
		return c
	}
	c.Detail = d.storePath() + " is whole (bbolt's check found nothing)"
	return c
}

func (d *Doctor) checkFreeSpace() Check {
	c := Check{Name: "free space", Status: OK}
	want := app.DefaultSettings().MinFreeDiskMB
	if d.opts.Engine != nil {
		want = d.opts.Engine.Settings().MinFreeDiskMB
	}
	free, err := app.DiskFree(d.opts.DataDir)
	if err != nil {
		c.Status, c.Detail = Warn, "the free space of the data dir cannot be read: "+err.Error()
		return c
	}
	c.Detail = fmt.Sprintf("%d MiB free on the data dir's filesystem (runs are refused below minFreeDiskMb %d)", free>>20, want)
	switch mb := int(free >> 20); {
	case want > 0 && mb < want:
		c.Status = Fail
	case want > 0 && mb < 2*want:
		c.Status = Warn
	}
	if c.Status != OK {
		c.Fix = "free space on it (senclaw rm --purge removes sandboxes with their files; senclaw doctor --repair what runs left), or lower minFreeDiskMb (senclaw settings set minFreeDiskMb=N)"
	}
	return c
}

// checkIsolation says how each backend and facility stands.
func checkIsolation(caps app.Capabilities) []Check {
	var out []Check
	for _, b := range append(append([]backends.Capability{}, caps.Backends...), caps.Facilities...) {
		if b.Backend == "direct" {
			continue // no barrier by design: nothing to be healthy about
		}
		c := Check{Name: b.Backend, Status: OK, Detail: string(b.State)}
		if b.Version != "" {
			c.Detail += " (" + b.Version + ")"
		}
		if b.Reason != "" {
			c.Detail += ": " + b.Reason
		}
		switch {
		case b.Backend == limits.FacilityName && !b.Usable():
			// Runs go on under rlimits: approximate, not refused.
			c.Status, c.Fix = Warn, "memory is limited per process and CPU not at all: on a machine with cgroup v2, run the engine where systemd's user manager answers "+
				"(a login session; loginctl enable-linger USER starts one for a user without), which then delegates a scope to it; or run it as root"
		case !b.Usable():
			c.Status, c.Fix = Warn, "runs that ask for "+b.Backend+" are refused until it works; the detail says why (senclaw caps --json has the whole probe)"
		}
		out = append(out, c)
	}
	if caps.State == app.Degraded {
		out = append(out, Check{Name: "isolation", Status: Fail, Detail: caps.Summary,
			Fix: "install bubblewrap (apt install bubblewrap) or start Docker; until then every run that asks for isolation is refused"})
	}
	return out
}

// leftoverChecks sums up what the engine left.
func leftoverChecks(left []app.Leftover, err error) []Check {
	if err != nil {
		return []Check{{Name: "leftovers", Status: Warn, Detail: "could not be looked for: " + err.Error()}}
	}
	var removable, kept []string
	for _, l := range left {
		if l.Removable {
			removable = append(removable, l.Kind+" "+l.What)
		} else if l.Kind == "files" {
			kept = append(kept, l.What)
		}
	}
	c := Check{Name: "leftovers", Status: OK, Detail: "no process, cgroup, container or one-shot workspace of this engine is left"}
	if len(removable) > 0 {
		c.Status, c.Detail = Warn, fmt.Sprintf("%d left that no sandbox or run owns: %s", len(removable), strings.Join(removable, ", "))
		c.Fix = "senclaw doctor --repair removes them"
	}
	out := []Check{c}
	if len(kept) > 0 {
		out = append(out, Check{Name: "kept files", Status: OK,
			Detail: fmt.Sprintf("%d workspaces of deleted sandboxes are kept (deleted without --purge): %s", len(kept), strings.Join(kept, ", ")),
			Fix:    "remove a folder yourself when you no longer need its files"})
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return "the engine could not start (no reason given)"
	}
	return err.Error()
}
