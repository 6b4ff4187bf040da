package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/senclaw/sandbox/app/client"
)

// Trace executes `senclaw trace on|off SANDBOX`.
func Trace(ctx context.Context, c *client.Client, args []string, io IO) int {
	if len(args) != 2 || (args[0] != "on" && args[0] != "off") {
		fmt.Fprintln(io.Err, "senclaw trace: usage: senclaw trace on|off SANDBOX")
		return ExitUsage
	}
	res, err := c.SetTracing(ctx, args[1], args[0] == "on")
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw trace:", err)
		return exitFor(err)
	}
	fmt.Fprintf(io.Out, "tracing of %s is %s\n", args[1], res.Tracing)
	if res.Note != "" {
		fmt.Fprintln(io.Err, "senclaw: note:", res.Note)
	}
	return 0
}

// Events executes `senclaw events RUN`: what a traced run read, wrote,
// started and connected to.
func Events(ctx context.Context, c *client.Client, runID, kind string, limit int, jsonOut bool, io IO) int {
	if runID == "" {
		fmt.Fprintln(io.Err, "senclaw events: usage: senclaw events [--kind PREFIX] [--limit N] RUN")
		return ExitUsage
	}
	run, err := c.Run(ctx, runID)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw events:", err)
		return exitFor(err)
	}
	res, err := c.TraceEvents(ctx, run.SandboxID, client.EventsQuery{RunID: runID, Kind: kind, Limit: limit})
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw events:", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, res)
		return 0
	}
	tw := table(io.Out)
	fmt.Fprintln(tw, "TIME\tPID\tKIND\tTARGET\tDETAIL\tSOURCE")
	for _, ev := range res.Events {
		at := time.UnixMilli(ev.TimeMs).Local().Format("15:04:05.000")
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", at, ev.Pid, ev.Kind, oneLine(ev.Target, 70), oneLine(ev.Detail, 50), ev.Source)
	}
	tw.Flush()
	if res.Note != "" {
		fmt.Fprintln(io.Err, "senclaw: note:", res.Note)
	}
	return 0
}
