package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func cacheCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cache ls|clear ...", Short: "the package caches (pip, npm, Go, Cargo) each project and sandbox keeps",
		Long: "Each project (the agent shell's project sandbox and run --here) keeps its package managers' caches in the engine's data dir, bound at /tmp/senclaw-cache in its runs " +
			"(PIP_CACHE_DIR, npm_config_cache, GOCACHE, GOMODCACHE and CARGO_HOME point there); a persistent sandbox keeps them at the usual places in its workspace, counted in its disk quota. " +
			"No project or sandbox sees another's. senclaw rm --purge removes them with the sandbox.",
		Example: examples("senclaw cache ls", "senclaw cache clear agent:myproject", "senclaw cache clear"),
		RunE:    verbs,
	}
	ls := &cobra.Command{
		Use: "ls [--json]", Aliases: []string{"list"}, Short: "list the package caches with the room they take",
		Example: examples("senclaw cache ls", "senclaw cache ls --json"),
	}
	jsonOut := tableFlags(ls, x)
	ls.RunE = x.noArgs("cache ls", func(c *client.Client) int { return cacheList(x.ctx, c, *jsonOut, x.io) })
	clear := &cobra.Command{
		Use: "clear [SANDBOX]", Short: "empty a sandbox's package caches (its project's), or every one",
		Long:    "SANDBOX is an id or a name (senclaw ls): for the agent shell's project sandbox, the project's caches, which run --here in that folder shares. Without one, every cache is emptied. Runs going on keep empty caches.",
		Example: examples("senclaw cache clear 3f9c2a", "senclaw cache clear"),
		RunE: x.action(func(args []string) int {
			return x.withClient(func(c *client.Client) int { return cacheClear(x.ctx, c, args, x.io) })
		}),
	}
	cmd.AddCommand(ls, clear)
	return cmd
}

// cacheList executes `senclaw cache ls`.
func cacheList(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	caches, err := c.Caches(ctx)
	if err != nil {
		say(io.Err, "senclaw cache ls: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, caches)
		return 0
	}
	tw := table(io)
	row(tw, "KIND", "SANDBOX", "PROJECT", "SIZE", "FILES", "DIR")
	for _, ci := range caches {
		row(tw, ci.Kind, dash(ci.SandboxID), dash(ci.Project), sizeText(ci.Bytes), fmt.Sprint(ci.Files), ci.Dir)
	}
	tw.Flush()
	return 0
}

// cacheClear executes `senclaw cache clear [SANDBOX]`.
func cacheClear(ctx context.Context, c *client.Client, args []string, io streams) int {
	if len(args) > 1 {
		say(io.Err, "senclaw cache clear: give one sandbox, or none for every cache; usage: senclaw cache clear [SANDBOX]")
		return ExitUsage
	}
	id := ""
	if len(args) == 1 {
		if id = args[0]; id == "" {
			say(io.Err, "senclaw cache clear: no id given (senclaw ls lists the sandboxes; senclaw cache clear alone clears every cache)")
			return ExitUsage
		}
	}
	if err := c.ClearCaches(ctx, id); err != nil {
		say(io.Err, "senclaw cache clear: %v", err)
		return exitFor(err)
	}
	if id == "" {
		say(io.Out, "cleared every package cache")
	} else {
		say(io.Out, "cleared the package caches of %s", id)
	}
	return 0
}

// sizeText is a size in bytes for people: 0 B, 12 KiB, 3.4 MiB, 1.2 GiB.
func sizeText(b int64) string {
	switch {
	case b < 1<<10:
		return fmt.Sprintf("%d B", b)
	case b < 1<<20:
		return fmt.Sprintf("%d KiB", b>>10)
	case b < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}
