package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/senclaw/sandbox/app/client"
)

// Trace executes `senclaw trace on|off SANDBOX`.
func Trace(ctx context.Context, c *client.Client, args []string, io IO) int {
	if len(args) != 2 || (args[0] != "on" && args[0] != "off") {
		say(io.Err, "senclaw trace: usage: senclaw trace on|off SANDBOX")
		return ExitUsage
	}
	res, err := c.SetTracing(ctx, args[1], args[0] == "on")
	if err != nil {
		say(io.Err, "senclaw trace: %v", err)
		return exitFor(err)
	}
	say(io.Out, "tracing of %s is %s", args[1], res.Tracing)
	if res.Note != "" {
		say(io.Err, "senclaw: note: %v", res.Note)
	}
	return 0
}

// Events executes `senclaw events RUN`: what a traced run read, wrote,
// started and connected to.
func Events(ctx context.Context, c *client.Client, runID, kind string, limit int, jsonOut bool, io IO) int {
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
