package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
)

// Caps executes `senclaw caps`.
func Caps(ctx context.Context, cl *client.Client, jsonOut bool, io IO) int {
	c, err := cl.Caps(ctx, true)
	if err != nil {
		say(io.Err, "senclaw caps: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, c)
		return 0
	}
	say(io.Out, "state: %s", c.State)
	say(io.Out, "%s", c.Summary)
	say(io.Out, "")
	tw := table(io)
	row(tw, "BACKEND", "STATE", "VERSION", "ISOLATES", "ENFORCES", "REASON")
	for _, b := range c.Backends {
		row(tw, b.Backend, string(b.State), dash(b.Version), fmt.Sprint(b.Isolates), dash(strings.Join(b.Enforces, ",")), b.Reason)
	}
	for _, f := range c.Facilities {
		row(tw, f.Backend, string(f.State), dash(f.Version), "-", "-", f.Reason)
	}
	tw.Flush()
	return 0
}

// List executes `senclaw ls`.
func List(ctx context.Context, c *client.Client, jsonOut bool, io IO) int {
	all, err := c.Sandboxes(ctx)
	if err != nil {
		say(io.Err, "senclaw ls: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		if all == nil {
			all = []app.Sandbox{}
		}
		writeJSON(io.Out, all)
		return 0
	}
	tw := table(io)
	row(tw, "ID", "NAME", "BACKEND", "FS", "NETWORK", "LIMITS", "STATE", "LAST USE")
	for _, s := range all {
		backend := s.Backend
		if backend == "" {
			backend = "auto"
		}
		row(tw, s.ID, s.Name, backend, string(s.FsMode), networkCell(s),
			fmt.Sprintf("%g cpu, %d MB, %d pids, %d s", s.CPUs, s.MemoryMB, s.Pids, s.TimeoutMs/1000), s.State, ago(s.LastUsedAt))
	}
	tw.Flush()
	return 0
}

// networkCell is a sandbox's network as the dashboard shows it: on or
// off, then the rules (connect, loopback, listen ports).
func networkCell(s app.Sandbox) string {
	parts := []string{"off"}
	if s.Network {
		parts[0] = "on"
	}
	for _, r := range []struct {
		name  string
		ports []int
	}{{"connect", s.Ports.Connect}, {"loopback", s.Ports.Loopback}, {"listen", s.Ports.Listen}} {
		if len(r.ports) > 0 {
			parts = append(parts, r.name+" "+strings.Trim(strings.ReplaceAll(fmt.Sprint(r.ports), " ", ","), "[]"))
		}
	}
	return strings.Join(parts, " · ")
}

// Remove executes `senclaw rm`.
func Remove(ctx context.Context, c *client.Client, ids []string, purge bool, io IO) int {
	if len(ids) == 0 {
		say(io.Err, "senclaw rm: give the id of a sandbox (senclaw ls lists them)")
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		res, err := c.Delete(ctx, id, purge)
		if err != nil {
			say(io.Err, "senclaw rm: %v", err)
			code = max(code, exitFor(err))
			continue
		}
		files := "files kept"
		if res.Files == "purged" {
			files = "files removed"
		} else if purge {
			files = "files kept: the workspace is not senclaw's own directory"
		}
		say(io.Out, "deleted %s (%s)", id, files)
	}
	return code
}

// Kill executes `senclaw kill`: it stops every process of the sandboxes.
func Kill(ctx context.Context, c *client.Client, ids []string, all bool, io IO) int {
	if all {
		n, err := c.StopAll(ctx)
		if err != nil {
			say(io.Err, "senclaw kill: %v", err)
			return exitFor(err)
		}
		say(io.Out, "stopped %d runs", n)
		return 0
	}
	if len(ids) == 0 {
		say(io.Err, "senclaw kill: give sandbox ids, or --all")
		return ExitUsage
	}
	for _, id := range ids {
		n, err := c.Stop(ctx, id)
		var ce *client.Error
		if errors.As(err, &ce) && ce.Status == http.StatusNotFound {
			// Not a sandbox: perhaps a run (senclaw ps lists them).
			killed, rerr := c.KillRun(ctx, id)
			if rerr == nil {
				if killed {
					say(io.Out, "run %s: killed", id)
				} else {
					say(io.Out, "run %s: not running (it had ended)", id)
				}
				continue
			}
			say(io.Err, "senclaw kill: %q is neither a sandbox (senclaw ls) nor a run (senclaw ps)", id)
			return ExitUsage
		}
		if err != nil {
			say(io.Err, "senclaw kill: %v", err)
			return exitFor(err)
		}
		say(io.Out, "%s: stopped %d runs", id, n)
	}
	return 0
}

// Runs executes `senclaw runs`.
func Runs(ctx context.Context, c *client.Client, sandboxID string, limit int, jsonOut bool, io IO) int {
	runs, err := c.Runs(ctx, sandboxID, limit)
	if err != nil {
		say(io.Err, "senclaw runs: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, runs)
		return 0
	}
	tw := table(io)
	row(tw, "RUN", "WHEN", "SOURCE", "SANDBOX", "ISOLATION", "EXIT", "TIME", "COMMAND")
	for _, r := range runs {
		exit := "-"
		switch {
		case r.State == "running":
			exit = "running"
		case r.TimedOut:
			exit = "timeout"
		case r.Killed != "":
			exit = "killed"
		case r.ExitCode != nil:
			exit = fmt.Sprint(*r.ExitCode)
		}
		row(tw, r.ID, ago(r.StartedAt), r.Source, r.SandboxName, r.Isolation, exit, fmt.Sprintf("%d ms", r.DurationMs), oneLine(r.Command))
	}
	tw.Flush()
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine puts s on one line: row escapes the newlines, and the table
// cuts what does not fit the terminal.
func oneLine(s string) string { return strings.TrimSpace(s) }

func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}
