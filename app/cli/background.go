package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/senclaw/sandbox/app/client"
)

// PS executes `senclaw ps`: the background runs going on now.
func PS(ctx context.Context, c *client.Client, jsonOut bool, io IO) int {
	runs, err := c.BackgroundRuns(ctx)
	if err != nil {
		say(io.Err, "senclaw ps: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, runs)
		return 0
	}
	if len(runs) == 0 {
		say(io.Out, "no background runs (start one with senclaw run --background)")
		return 0
	}
	tw := table(io)
	row(tw, "RUN", "SANDBOX", "STARTED", "ISOLATION", "ENDS", "COMMAND")
	for _, r := range runs {
		ends := "when stopped"
		if r.TTLMs > 0 {
			ends = "in " + time.Until(r.StartedAt.Add(time.Duration(r.TTLMs)*time.Millisecond)).Round(time.Second).String()
		}
		if r.IdleTTLMs > 0 {
			ends += ", or " + (time.Duration(r.IdleTTLMs) * time.Millisecond).String() + " idle"
		}
		row(tw, r.ID, dash(r.SandboxName), ago(r.StartedAt), r.Isolation, ends, oneLine(r.Command))
	}
	tw.Flush()
	return 0
}

// Logs executes `senclaw logs [-f] [--tail N] RUN`: a background run's
// log, and with follow what it writes next, until it ends.
func Logs(ctx context.Context, c *client.Client, runID string, follow bool, tail int, io IO) int {
	offset := int64(0)
	if tail > 0 {
		offset = -int64(tail)
	}
	if !follow {
		for {
			part, err := c.RunLog(ctx, runID, offset, 1<<20)
			if err != nil {
				say(io.Err, "senclaw logs: %v", err)
				return exitFor(err)
			}
			// The run's own output, as `senclaw run` prints it.
			fmt.Fprint(io.Out, part.Data)
			offset = part.Offset + int64(len(part.Data))
			if offset >= part.Size || part.Data == "" {
				return 0
			}
		}
	}
	rec, err := c.FollowRunLog(ctx, runID, offset, func(data string) { fmt.Fprint(io.Out, data) })
	if err != nil {
		if ctx.Err() != nil {
			return 0 // interrupted: the run goes on
		}
		say(io.Err, "senclaw logs: %v", err)
		return exitFor(err)
	}
	if rec.ExitCode != nil {
		say(io.Err, "senclaw: run %s ended with exit code %d", runID, *rec.ExitCode)
	} else if rec.Killed != "" {
		say(io.Err, "senclaw: run %s was killed: %s", runID, rec.Killed)
	}
	return 0
}
