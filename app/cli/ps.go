package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func psCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "ps [-a] [--json]", Short: "the background runs going on now (-a: and those that ended)",
		Long: "A background run (senclaw run --background) runs until it exits, is killed, its sandbox is stopped or deleted, or the engine stops, unless it was given --ttl or --idle-ttl. " +
			"-a adds the background runs that ended, among the last 200 runs, with how (senclaw logs RUN prints their output); senclaw runs lists every run.",
		Example: examples("senclaw ps", "senclaw ps -a", "senclaw ps --json"),
	}
	jsonOut := tableFlags(cmd, x)
	all := cmd.Flags().BoolP("all", "a", false, "the background runs that ended too")
	cmd.RunE = x.noArgs("ps", func(c *client.Client) int {
		if *all {
			return psAll(x.ctx, c, *jsonOut, x.io)
		}
		return ps(x.ctx, c, *jsonOut, x.io)
	})
	return cmd
}

// psAll executes `senclaw ps -a`: the background runs, going on and
// ended, newest first.
func psAll(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	recent, err := c.Runs(ctx, "", 200)
	if err != nil {
		say(io.Err, "senclaw ps: %v", err)
		return exitFor(err)
	}
	runs := []apitype.RunRecord{}
	for _, r := range recent {
		if r.Background {
			runs = append(runs, r)
		}
	}
	if jsonOut {
		writeJSON(io.Out, runs)
		return 0
	}
	if len(runs) == 0 {
		say(io.Out, "no background runs among the last 200 (start one with senclaw run --background)")
		return 0
	}
	tw := table(io)
	row(tw, "RUN", "SANDBOX", "STARTED", "ISOLATION", "STATE", "COMMAND")
	for _, r := range runs {
		state := "running"
		switch {
		case r.State == "running":
		case r.TimedOut:
			state = "timed out"
		case r.Killed != "":
			state = "killed"
		case r.ExitCode != nil:
			state = fmt.Sprintf("exited %d", *r.ExitCode)
		case r.Error != "":
			state = "failed"
		default:
			state = "ended"
		}
		row(tw, r.ID, dash(r.SandboxName), ago(r.StartedAt), r.Isolation, state, oneLine(r.Command))
	}
	tw.Flush()
	return 0
}

// ps executes `senclaw ps`: the background runs going on now.
func ps(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
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
