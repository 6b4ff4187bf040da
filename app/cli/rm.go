package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func rmCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "rm [-f] [--purge] ID...", Aliases: []string{"delete"}, Short: "delete sandboxes (--purge: and their own files)",
		Long: "A sandbox's runs going on are killed first; -f (as docker rm -f) says so for each. " +
			"--purge removes only a sandbox's own workspace under the data dir, never an agent's project directory or a mounted folder.",
		Example: examples("senclaw rm 3f9c2a", "senclaw rm -f --purge 3f9c2a 7d01be"),
	}
	purge := cmd.Flags().Bool("purge", false, "also remove the sandbox's own workspace files")
	force := cmd.Flags().BoolP("force", "f", false, "kill the sandbox's runs, saying how many, then delete it")
	cmd.RunE = x.action(func(args []string) int {
		if !idsGiven(x.io, "rm", "a sandbox's id or name (senclaw ls lists them)", args) {
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int {
			if *force {
				for _, id := range args {
					if n, err := c.Stop(x.ctx, id); err == nil && n > 0 {
						say(x.io.Out, "%s: killed %d runs", id, n)
					}
				}
			}
			return remove(x.ctx, c, args, *purge, x.io)
		})
	})
	return cmd
}

// remove executes `senclaw rm`.
func remove(ctx context.Context, c *client.Client, ids []string, purge bool, io streams) int {
	if len(ids) == 0 {
		say(io.Err, "senclaw rm: give the id of a sandbox (senclaw ls lists them)")
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		res, err := c.Delete(ctx, id, purge)
		if err != nil {
			say(io.Err, "senclaw rm: %v", err)
			code = max(code, exitFor(err))
			continue
		}
		files := "files kept"
		if res.Files == "purged" {
			files = "files removed"
		} else if purge {
			files = "files kept: the workspace is not senclaw's own directory; a project's package caches are removed"
		}
		say(io.Out, "deleted %s (%s)", id, files)
	}
	return code
}
