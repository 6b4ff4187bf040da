package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
)

// Caps executes `senclaw caps`.
func Caps(ctx context.Context, cl *client.Client, jsonOut bool, io IO) int {
	c, err := cl.Caps(ctx, true)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw caps:", err)
		return ExitFailure
	}
	if jsonOut {
		writeJSON(io.Out, c)
		return 0
	}
	fmt.Fprintf(io.Out, "state: %s\n%s\n\n", c.State, c.Summary)
	tw := table(io.Out)
	fmt.Fprintln(tw, "BACKEND\tSTATE\tVERSION\tISOLATES\tENFORCES\tREASON")
	for _, b := range c.Backends {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", b.Backend, b.State, dash(b.Version), b.Isolates, dash(strings.Join(b.Enforces, ",")), b.Reason)
	}
	for _, f := range c.Facilities {
		fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t%s\n", f.Backend, f.State, dash(f.Version), f.Reason)
	}
	tw.Flush()
	return 0
}

// List executes `senclaw ls`.
func List(ctx context.Context, c *client.Client, jsonOut bool, io IO) int {
	all, err := c.Sandboxes(ctx)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw ls:", err)
		return ExitFailure
	}
	if jsonOut {
		if all == nil {
			all = []app.Sandbox{}
		}
		writeJSON(io.Out, all)
		return 0
	}
	tw := table(io.Out)
	fmt.Fprintln(tw, "ID\tNAME\tBACKEND\tFS\tNETWORK\tLIMITS\tSTATE\tLAST USE")
	for _, s := range all {
		backend := s.Backend
		if backend == "" {
			backend = "auto"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%g cpu, %d MB, %d pids, %d s\t%s\t%s\n",
			s.ID, s.Name, backend, s.FsMode, s.Network, s.CPUs, s.MemoryMB, s.Pids, s.TimeoutMs/1000, s.State, ago(s.LastUsedAt))
	}
	tw.Flush()
	return 0
}

// Remove executes `senclaw rm`.
func Remove(ctx context.Context, c *client.Client, ids []string, purge bool, io IO) int {
	if len(ids) == 0 {
		fmt.Fprintln(io.Err, "senclaw rm: give the id of a sandbox (senclaw ls lists them)")
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		res, err := c.Delete(ctx, id, purge)
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw rm:", err)
			code = ExitFailure
			continue
		}
		files := "files kept"
		if res.Files == "purged" {
			files = "files removed"
		} else if purge {
			files = "files kept: the workspace is not senclaw's own directory"
		}
		fmt.Fprintf(io.Out, "deleted %s (%s)\n", id, files)
	}
	return code
}

// Kill executes `senclaw kill`: it stops every process of the sandboxes.
func Kill(ctx context.Context, c *client.Client, ids []string, all bool, io IO) int {
	if all {
		n, err := c.StopAll(ctx)
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw kill:", err)
			return ExitFailure
		}
		fmt.Fprintf(io.Out, "stopped %d runs\n", n)
		return 0
	}
	if len(ids) == 0 {
		fmt.Fprintln(io.Err, "senclaw kill: give sandbox ids, or --all")
		return ExitUsage
	}
	for _, id := range ids {
		n, err := c.Stop(ctx, id)
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw kill:", err)
			return ExitFailure
		}
		fmt.Fprintf(io.Out, "%s: stopped %d runs\n", id, n)
	}
	return 0
}

// Runs executes `senclaw runs`.
func Runs(ctx context.Context, c *client.Client, sandboxID string, limit int, jsonOut bool, io IO) int {
	runs, err := c.Runs(ctx, sandboxID, limit)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw runs:", err)
		return ExitFailure
	}
	if jsonOut {
		writeJSON(io.Out, runs)
		return 0
	}
	tw := table(io.Out)
	fmt.Fprintln(tw, "RUN\tWHEN\tSOURCE\tSANDBOX\tISOLATION\tEXIT\tTIME\tCOMMAND")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d ms\t%s\n", r.ID, ago(r.StartedAt), r.Source, r.SandboxName, r.Isolation, exit, r.DurationMs, oneLine(r.Command, 60))
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

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len([]rune(s)) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}

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
