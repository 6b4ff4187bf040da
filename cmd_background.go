// `senclaw ps` and `senclaw logs`: background runs, as docker ps and
// docker logs show containers.

package main

import (
	"flag"
	"fmt"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
)

func psCommand() *command {
	return &command{
		name: "ps", summary: "the background runs going on now",
		args:     "[--json]",
		about:    "A background run (senclaw run --background) runs until it exits, is killed, its sandbox is stopped or deleted, or the engine stops, unless it was given --ttl or --idle-ttl.",
		examples: []string{"senclaw ps", "senclaw ps --json"},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			jsonOut := tableFlags(fs, x)
			return noArgs(x, "ps", func(c *client.Client) int { return cli.PS(x.ctx, c, *jsonOut, x.io) })
		},
	}
}

func logsCommand() *command {
	return &command{
		name: "logs", summary: "show (and follow) a background run's output",
		args:     "[-f] [--tail BYTES] RUN",
		examples: []string{"senclaw logs 8c1d9e0f2a3b", "senclaw logs -f --tail 4096 8c1d9e0f2a3b"},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			follow := fs.Bool("f", false, "follow: print what the run writes next, until it ends (Ctrl-C stops following, not the run)")
			fs.BoolVar(follow, "follow", false, "the same as -f")
			tail := fs.Int("tail", 0, "start this many `BYTES` before the end (default: from the start)")
			return func(args []string) int {
				if len(args) != 1 {
					fmt.Fprintln(x.io.Err, "senclaw logs: give one run id (senclaw ps lists the background runs)")
					return cli.ExitUsage
				}
				return x.withClient(func(c *client.Client) int { return cli.Logs(x.ctx, c, args[0], *follow, *tail, x.io) })
			}
		},
	}
}
