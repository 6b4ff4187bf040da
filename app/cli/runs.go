package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func runsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "runs [--sandbox ID] [--limit N] [--json]", Short: "recent runs and the isolation each really got",
		Example: examples("senclaw runs", "senclaw runs --sandbox 3f9c2a --limit 5 --json"),
	}
	sandbox := cmd.Flags().String("sandbox", "", "only the runs of sandbox `ID`")
	limit := cmd.Flags().Int("limit", 30, "how many runs, `N`, newest first (1 to 5000)")
	jsonOut := tableFlags(cmd, x)
	cmd.RunE = x.noArgs("runs", func(c *client.Client) int { return runs(x.ctx, c, *sandbox, *limit, *jsonOut, x.io) })
	show := &cobra.Command{
		Use: "show RUN [--refusals] [--json]", Short: "one run's record: what it ran, the isolation it got, how it ended, what it was refused",
		Example: examples("senclaw runs show r18c3f2a9b4d5e6f7a1b2", "senclaw runs show r18c3f2a9b4d5e6f7a1b2 --refusals"),
	}
	refusals := show.Flags().Bool("refusals", false, "only what the sandbox was refused during the run, each with how to allow it")
	showJSON := jsonFlag(show)
	show.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			say(x.io.Err, "senclaw runs show: give one run's id (senclaw runs lists them)")
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return runShow(x.ctx, c, args[0], *refusals, *showJSON, x.io) })
	})
	cmd.AddCommand(show)
	return cmd
}

// runShow executes `senclaw runs show`.
func runShow(ctx context.Context, c *client.Client, id string, refusalsOnly, jsonOut bool, io streams) int {
	r, err := c.Run(ctx, id)
	if err != nil {
		say(io.Err, "senclaw runs show: %v", err)
		return exitFor(err)
	}
	if refusalsOnly {
		if jsonOut {
			list := r.Refusals
			if list == nil {
				list = []apitype.Refusal{}
			}
			writeJSON(io.Out, list)
			return 0
		}
		if len(r.Refusals) == 0 {
			say(io.Out, "run %s was refused nothing", r.ID)
		}
		for _, f := range r.Refusals {
			say(io.Out, "%s", f.Line())
		}
		return 0
	}
	if jsonOut {
		writeJSON(io.Out, r)
		return 0
	}
	exit := "-"
	switch {
	case r.State == "running":
		exit = "running"
	case r.TimedOut:
		exit = "timed out"
	case r.Killed != "":
		exit = "killed: " + r.Killed
	case r.ExitCode != nil:
		exit = fmt.Sprint(*r.ExitCode)
	}
	tw := table(io)
	for _, kv := range [][2]string{
		{"run", r.ID}, {"sandbox", r.SandboxName + " (" + r.SandboxID + ")"}, {"source", r.Source}, {"command", oneLine(r.Command)},
		{"isolation", r.Isolation}, {"started", r.StartedAt.Local().Format("2006-01-02 15:04:05")}, {"took", fmt.Sprintf("%d ms", r.DurationMs)}, {"exit", exit},
	} {
		row(tw, kv[0], kv[1])
	}
	for _, m := range r.Missing {
		row(tw, "not enforced", m)
	}
	if r.Error != "" {
		row(tw, "error", r.Error)
	}
	tw.Flush()
	if len(r.Refusals) > 0 {
		say(io.Out, "refused during the run:")
		for _, f := range r.Refusals {
			say(io.Out, "  %s", f.Line())
		}
	}
	return 0
}

// runs executes `senclaw runs`.
func runs(ctx context.Context, c *client.Client, sandboxID string, limit int, jsonOut bool, io streams) int {
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
