// `senclaw settings`: every setting, shown and set from the command line.

package main

import (
	"flag"
	"fmt"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
)

func settingsCommand() *command {
	return &command{
		name: "settings", summary: "show or change the engine's settings",
		args:  "[--json] | set KEY=VALUE...",
		about: "Every setting with its value and what it is. The dashboard's Defaults card changes the same ones; allowDirect and the sandbox user are only for people, never for an agent's MCP call.",
		examples: []string{
			"senclaw settings",
			"senclaw settings set defaultMemoryMb=1024 defaultNetwork=true",
			"senclaw settings set allowlist=/usr/share/dict,/opt/data",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			jsonOut := tableFlags(fs, x)
			return noArgs(x, "settings", func(c *client.Client) int { return cli.Settings(x.ctx, c, nil, *jsonOut, x.io) })
		},
		sub: []*command{{
			name: "set", summary: "change settings, KEY=VALUE each (lists comma-separated)",
			args:     "KEY=VALUE...",
			examples: []string{"senclaw settings set defaultTimeoutMs=60000", "senclaw settings set allowDirect=false notifications=off"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				jsonOut := jsonFlag(fs)
				return func(args []string) int {
					if len(args) == 0 {
						fmt.Fprintln(x.io.Err, "senclaw settings set: give KEY=VALUE (senclaw settings lists the keys)")
						return cli.ExitUsage
					}
					return x.withClient(func(c *client.Client) int { return cli.Settings(x.ctx, c, args, *jsonOut, x.io) })
				}
			},
		}},
	}
}
