package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func eventsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "events [--kind PREFIX] [--limit N] [--json] RUN", Short: "what a traced run read, wrote, started and connected to",
		Example: examples("senclaw events 8c1d9e0f2a3b", "senclaw events --kind net 8c1d9e0f2a3b"),
	}
	kind := cmd.Flags().String("kind", "", "only events whose kind starts with `PREFIX`: file, proc, net or denied")
	limit := cmd.Flags().Int("limit", 200, "how many events, `N` (1 to 5000)")
	jsonOut := tableFlags(cmd, x)
	cmd.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(x.io.Err, "senclaw events: give one run id (senclaw runs lists them); usage: senclaw events [--kind PREFIX] [--limit N] RUN")
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return events(x.ctx, c, args[0], *kind, *limit, *jsonOut, x.io) })
	})
	return cmd
}

// events executes `senclaw events RUN`: what a traced run read, wrote,
// started and connected to.
func events(ctx context.Context, c *client.Client, runID, kind string, limit int, jsonOut bool, io streams) int {
	if runID == "" {
		say(io.Err, "senclaw events: usage: senclaw events [--kind PREFIX] [--limit N] RUN")
		return ExitUsage
	}
	run, err := c.Run(ctx, runID)
	if err != nil {
		say(io.Err, "senclaw events: %v", err)
		return exitFor(err)
	}
	res, err := c.TraceEvents(ctx, run.SandboxID, client.EventsQuery{RunID: runID, Kind: kind, Limit: limit})
	if err != nil {
		say(io.Err, "senclaw events: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, res)
		return 0
	}
	tw := table(io)
	row(tw, "TIME", "PID", "KIND", "TARGET", "DETAIL", "SOURCE")
	for _, ev := range res.Events {
		at := time.UnixMilli(ev.TimeMs).Local().Format("15:04:05.000")
		row(tw, at, strconv.Itoa(ev.Pid), ev.Kind, oneLine(ev.Target), oneLine(ev.Detail), ev.Source)
	}
	tw.Flush()
	if res.Note != "" {
		say(io.Err, "senclaw: note: %v", res.Note)
	}
	return 0
}
