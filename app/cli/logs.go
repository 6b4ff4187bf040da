package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func logsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "logs [-f] [--tail BYTES] RUN", Short: "show (and follow) a run's output, going on or finished",
		Long: "Any run that has output, as docker logs: a background run's log; what a run going on writes; what a finished run's record keeps " +
			"(its stdout and stderr; for a background run whose log went with its one-shot sandbox, the log's last 32 KiB). " +
			"senclaw ps lists the background runs, senclaw runs every run.",
		Example: examples("senclaw logs 8c1d9e0f2a3b", "senclaw logs -f --tail 4096 8c1d9e0f2a3b"),
	}
	follow := cmd.Flags().BoolP("follow", "f", false, "follow: print what the run writes next, until it ends (Ctrl-C stops following, not the run)")
	tail := cmd.Flags().Int("tail", 0, "start this many `BYTES` before the end (default: from the start)")
	cmd.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(x.io.Err, "senclaw logs: give one run id (senclaw ps lists the background runs, senclaw runs every run)")
			return ExitUsage
		}
		if !idsGiven(x.io, "logs", "a run's id (senclaw runs lists them)", args) {
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return logs(x.ctx, c, args[0], *follow, *tail, x.io) })
	})
	return cmd
}

// logs executes `senclaw logs [-f] [--tail N] RUN`: a run's output, and
// with follow what it writes next, until it ends.
func logs(ctx context.Context, c *client.Client, runID string, follow bool, tail int, io streams) int {
	offset := int64(0)
	if tail > 0 {
		offset = -int64(tail)
	}
	write := func(stream, data string) {
		// The run's own output, as `senclaw run` prints it.
		if stream == "stderr" {
			fmt.Fprint(io.Err, data)
		} else {
			fmt.Fprint(io.Out, data)
		}
	}
	skipped := func(n int64) {
		say(io.Err, "senclaw: note: %d bytes of the run's output before this were not kept (a finished run's record keeps the last %d KiB)", n, recordLogKiB)
	}
	var part *apitype.RunLog
	for {
		p, err := c.RunLog(ctx, runID, offset, 1<<20)
		if err != nil {
			say(io.Err, "senclaw logs: %v", err)
			return exitFor(err)
		}
		part = p
		if offset >= 0 && part.Offset > offset {
			skipped(part.Offset - offset)
		}
		writePart(part, write)
		offset = part.Offset + int64(len(part.Data))
		if offset >= part.Size || part.Data == "" {
			break
		}
	}
	if !follow || !part.Running {
		if part.Size == 0 && !part.Running {
			sayEnd(ctx, c, runID, io, true)
		}
		return 0
	}
	rec, err := c.FollowRunLog(ctx, runID, offset, write, skipped)
	if err != nil {
		if ctx.Err() != nil {
			return 0 // interrupted: the run goes on
		}
		say(io.Err, "senclaw logs: %v", err)
		return exitFor(err)
	}
	sayEnded(rec, io)
	return 0
}

// recordLogKiB is how much of a background run's log a record keeps
// (the engine's recordLogTail), for the note that says so.
const recordLogKiB = 32

// writePart writes a part of a run's output: a finished foreground run's
// stderr, which its record keeps apart, to stderr.
func writePart(part *apitype.RunLog, write func(stream, data string)) {
	data := part.Data
	if at := part.StderrAt; at != nil {
		cut := min(max(*at-part.Offset, 0), int64(len(data)))
		write("stdout", data[:cut])
		data = data[cut:]
		write("stderr", data)
		return
	}
	write("stdout", data)
}

// sayEnd says how a finished run without output ended (a refused run
// has none).
func sayEnd(ctx context.Context, c *client.Client, runID string, io streams, empty bool) {
	rec, err := c.Run(ctx, runID)
	if err != nil {
		return
	}
	if empty && rec.Error != "" {
		say(io.Err, "senclaw: run %s has no output: %s", runID, rec.Error)
		return
	}
	sayEnded(rec, io)
}

// sayEnded says how a followed run ended.
func sayEnded(rec *apitype.RunRecord, io streams) {
	switch {
	case rec.TimedOut:
		say(io.Err, "senclaw: run %s timed out after %d ms", rec.ID, rec.DurationMs)
	case rec.Killed != "":
		say(io.Err, "senclaw: run %s was killed: %s", rec.ID, rec.Killed)
	case rec.ExitCode != nil:
		say(io.Err, "senclaw: run %s ended with exit code %d", rec.ID, *rec.ExitCode)
	case rec.Error != "":
		say(io.Err, "senclaw: run %s failed: %s", rec.ID, rec.Error)
	}
}
