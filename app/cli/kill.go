package cli

import (
	"context"
	"errors"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func killCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "kill (ID... | RUN... | --all)", Short: "kill every process of sandboxes, or one run",
		Long:    "An id of a sandbox (senclaw ls) kills all its processes; an id of a run (senclaw ps) kills that run.",
		Example: examples("senclaw kill 3f9c2a", "senclaw kill 8c1d9e0f2a3b   # one background run", "senclaw kill --all"),
	}
	all := cmd.Flags().Bool("all", false, "stop every sandbox")
	cmd.RunE = x.action(func(args []string) int {
		if !idsGiven(x.io, "kill", "a sandbox's id or name (senclaw ls), or a run's id (senclaw ps)", args) {
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return kill(x.ctx, c, args, *all, x.io) })
	})
	return cmd
}

// kill executes `senclaw kill`: it stops every process of the sandboxes.
func kill(ctx context.Context, c *client.Client, ids []string, all bool, io streams) int {
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
