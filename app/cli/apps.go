package cli

import (
	"context"
	"fmt"
	"github.com/senclaw/sandbox/app/safetext"
	"path/filepath"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/spaceapps"
)

// `senclaw apps`: the Space Apps verbs. Names, states and logs come from
// the apps themselves: they are made safe for a terminal before printing.

// AppsAdd executes `senclaw apps add DIR`.
func AppsAdd(ctx context.Context, c *client.Client, dir string, inPlace bool, envPairs []string, jsonOut bool, io IO) int {
	abs, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw apps add:", err)
		return ExitUsage
	}
	req := spaceapps.RegisterRequest{Dir: abs, InPlace: inPlace}
	if len(envPairs) > 0 {
		if req.Env, err = ParseEnv(envPairs); err != nil {
			fmt.Fprintln(io.Err, "senclaw apps add:", err)
			return ExitUsage
		}
	}
	r, err := c.RegisterApp(ctx, req)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw apps add:", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, r)
		return 0
	}
	fmt.Fprintln(io.Out, r.App.ID)
	fmt.Fprintln(io.Err, "senclaw: "+safetext.Escape(r.Note))
	return 0
}

// AppsList executes `senclaw apps ls`.
func AppsList(ctx context.Context, c *client.Client, jsonOut bool, io IO) int {
	l, err := c.Apps(ctx)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw apps ls:", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, l.Apps)
		return 0
	}
	tw := table(io)
	row(tw, "ID", "NAME", "STATE", "SANDBOX", "READ", "NETWORK", "PID", "UPTIME", "LAUNCHES", "CPU", "RAM", "HEALTH", "URL")
	for _, a := range l.Apps {
		sandbox := a.Sandbox.Isolation
		if sandbox == "" {
			sandbox = "off"
			if a.Sandbox.Enabled {
				sandbox = "on (" + a.Sandbox.Backend + ")"
			}
		}
		if a.NeedsRestart {
			sandbox += " NEEDS RESTART"
		}
		network := a.Sandbox.Network
		if network == spaceapps.NetworkHosts {
			network += fmt.Sprintf(" (%d)", a.Sandbox.HostCount)
		}
		if a.Sandbox.Denied > 0 {
			network += fmt.Sprintf(", %d refused", a.Sandbox.Denied)
		}
		pid, uptime, cpu, ram := "-", "-", "-", "-"
		if a.Pid > 0 {
			pid = fmt.Sprint(a.Pid)
			uptime = (time.Duration(a.UptimeSec) * time.Second).String()
			cpu, ram = fmt.Sprintf("%.1f%%", a.CPUPercent), fmt.Sprintf("%.0f MB", a.RSSMB)
		}
		launches := fmt.Sprint(a.Launches)
		if a.Launches > 3 {
			launches += "!"
		}
		row(tw, a.ID, oneLine(a.Name), a.State, sandbox, a.Sandbox.ReadMode, network,
			pid, uptime, launches, cpu, ram, a.Health.Status, dash(a.URL))
	}
	tw.Flush()
	for _, a := range l.Apps {
		switch {
		case a.NeedsRestart:
			fmt.Fprintf(io.Err, "senclaw: %s needs a restart: %s (senclaw apps restart %s)\n", a.ID, safetext.Escape(strings.Join(a.NeedsRestartReasons, "; ")), a.ID)
		case a.State == spaceapps.StateCrashLooping || a.State == spaceapps.StatePortTaken || a.State == spaceapps.StateFailed:
			fmt.Fprintf(io.Err, "senclaw: %s: %s\n", a.ID, safetext.Escape(a.StateText))
		}
	}
	return 0
}

// AppsStart executes `senclaw apps start|restart ID...`: it waits for each
// app's health check unless noWait, and fails when one is not healthy.
func AppsStart(ctx context.Context, c *client.Client, verb string, ids []string, noWait bool, io IO) int {
	if len(ids) == 0 {
		fmt.Fprintf(io.Err, "senclaw apps %s: give the app's id (senclaw apps ls lists them)\n", verb)
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		call := c.StartApp
		if verb == "restart" {
			call = c.RestartApp
		}
		r, err := call(ctx, id, !noWait)
		if err != nil {
			fmt.Fprintf(io.Err, "senclaw apps %s %s: %v\n", verb, id, err)
			code = max(code, exitFor(err))
			continue
		}
		if !r.OK {
			fmt.Fprintf(io.Err, "senclaw apps %s %s: %s\n", verb, id, safetext.Escape(r.Note))
			for _, l := range r.App.LastLog {
				fmt.Fprintln(io.Err, "  | "+safetext.Escape(l))
			}
			code = max(code, ExitFailure)
			continue
		}
		fmt.Fprintf(io.Out, "%s %s: %s, isolation %s, %s\n", id, r.App.State, safetext.Escape(r.Note), dash(r.App.Sandbox.Isolation), dash(r.App.URL))
	}
	return code
}

// AppsStop executes `senclaw apps stop ID...`.
func AppsStop(ctx context.Context, c *client.Client, ids []string, io IO) int {
	if len(ids) == 0 {
		fmt.Fprintln(io.Err, "senclaw apps stop: give the app's id (senclaw apps ls lists them)")
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		v, err := c.StopApp(ctx, id)
		if err != nil {
			fmt.Fprintf(io.Err, "senclaw apps stop %s: %v\n", id, err)
			code = max(code, exitFor(err))
			continue
		}
		fmt.Fprintf(io.Out, "%s %s\n", id, v.State)
	}
	return code
}

// AppsLogs executes `senclaw apps logs [-f|--clear] ID`.
func AppsLogs(ctx context.Context, c *client.Client, id string, follow, clear bool, limit int, io IO) int {
	if clear {
		if err := c.ClearAppLogs(ctx, id); err != nil {
			fmt.Fprintln(io.Err, "senclaw apps logs:", err)
			return exitFor(err)
		}
		fmt.Fprintf(io.Out, "the log of %s is empty\n", id)
		return 0
	}
	if follow {
		err := c.FollowAppLogs(ctx, id, limit, func(text string) { fmt.Fprint(io.Out, safeLog(text)) })
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw apps logs:", err)
			return exitFor(err)
		}
		return 0
	}
	l, err := c.AppLogs(ctx, id, limit)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw apps logs:", err)
		return exitFor(err)
	}
	fmt.Fprint(io.Out, safeLog(l.Text))
	if l.Truncated {
		fmt.Fprintf(io.Err, "senclaw: older output left out; read more with --bytes (up to %d)\n", spaceapps.MaxLogRead)
	}
	return 0
}

// AppSandboxChanges are the flags of `senclaw apps sandbox`.
type AppSandboxChanges struct {
	Patch spaceapps.SandboxPatch
	JSON  bool
}

// AppsSandbox executes `senclaw apps sandbox ID [flags]`: with no change
// it shows the configuration, else it applies the changes and says what
// applied at once and what needs a restart.
func AppsSandbox(ctx context.Context, c *client.Client, id string, ch AppSandboxChanges, changed bool, io IO) int {
	var view *spaceapps.SandboxView
	var note string
	if changed {
		r, err := c.SetAppSandbox(ctx, id, ch.Patch)
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw apps sandbox:", err)
			return exitFor(err)
		}
		if ch.JSON {
			writeJSON(io.Out, r)
			return 0
		}
		view, note = &r.Sandbox, r.Note
	} else {
		v, err := c.AppSandbox(ctx, id)
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw apps sandbox:", err)
			return exitFor(err)
		}
		if ch.JSON {
			writeJSON(io.Out, v)
			return 0
		}
		view = v
		defer func() {
			// What it gets, in words.
			if iso, err := c.AppIsolation(ctx, id); err == nil {
				for _, l := range iso.Enforced {
					fmt.Fprintln(io.Out, "  enforced: "+safetext.Escape(l))
				}
				for _, l := range iso.NotEnforced {
					fmt.Fprintln(io.Out, "  not enforced: "+safetext.Escape(l))
				}
			}
		}()
	}
	s := view.Settings
	tw := table(io)
	enabled := "off (no barrier: isolation none)"
	if s.Enabled {
		enabled = "on"
	}
	if view.Forced {
		enabled += " (forced by the manifest)"
	}
	hosts := dash(strings.Join(s.Hosts, ", "))
	var folders []string
	for _, f := range s.Folders {
		mode := "rw"
		if f.ReadOnly {
			mode = "ro"
		}
		folders = append(folders, f.Path+":"+mode)
	}
	rows := [][2]string{
		{"sandbox", enabled}, {"read mode", s.ReadMode}, {"network", s.Network}, {"hosts", hosts},
		{"loopback", dash(strings.Trim(fmt.Sprint(s.Loopback), "[]"))}, {"folders", dash(strings.Join(folders, ", "))},
		{"backend", s.Backend}, {"image", dash(s.Image)}, {"daemon API", fmt.Sprint(s.DaemonAPI)},
		{"running with", dash(view.Isolation)},
	}
	for _, r := range rows {
		row(tw, r[0], r[1])
	}
	tw.Flush()
	if note != "" {
		fmt.Fprintln(io.Err, "senclaw: "+note)
	}
	if view.NeedsRestart {
		fmt.Fprintf(io.Err, "senclaw: it needs a restart: %s (senclaw apps restart %s)\n", safetext.Escape(strings.Join(view.NeedsRestartReasons, "; ")), id)
	}
	return 0
}

// AppsRemove executes `senclaw apps rm [--purge] ID...`.
func AppsRemove(ctx context.Context, c *client.Client, ids []string, purge bool, io IO) int {
	if len(ids) == 0 {
		fmt.Fprintln(io.Err, "senclaw apps rm: give the app's id (senclaw apps ls lists them)")
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		files, err := c.RemoveApp(ctx, id, purge)
		if err != nil {
			fmt.Fprintf(io.Err, "senclaw apps rm %s: %v\n", id, err)
			code = max(code, exitFor(err))
			continue
		}
		say(io.Out, "%s removed; files: %s", id, files)
	}
	return code
}

// safeLog makes an app's log safe for a terminal: newlines and tabs stay,
// every other character safetext refuses becomes '?'.
func safeLog(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && !safetext.Printable(r) {
			return '?'
		}
		return r
	}, s)
}
