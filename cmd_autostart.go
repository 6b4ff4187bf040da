// `senclaw autostart`: Start at login, from the command line.

package main

import (
	"flag"
	"fmt"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
)

func autostartCommand() *command {
	return &command{
		name: "autostart", summary: "show or set whether the desktop app starts at login",
		args:  "[on|off] [--json]",
		about: "On writes ~/.config/autostart/senclaw.desktop (it starts this senclaw at login); off removes it. The dashboard's Defaults card and the tray's Start at login show and change the same file.",
		examples: []string{
			"senclaw autostart",
			"senclaw autostart on",
			"senclaw autostart off",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			jsonOut := jsonFlag(fs)
			return func(args []string) int {
				var want *bool
				switch {
				case len(args) == 0:
				case len(args) == 1 && (args[0] == "on" || args[0] == "off"):
					on := args[0] == "on"
					want = &on
				default:
					fmt.Fprintf(x.io.Err, "senclaw autostart: give on, off or nothing, got %q\n", args)
					return cli.ExitUsage
				}
				return x.withClient(func(c *client.Client) int {
					st, err := c.Autostart(x.ctx)
					if err == nil && want != nil {
						st, err = c.SetAutostart(x.ctx, *want)
					}
					if err != nil {
						fmt.Fprintln(x.io.Err, "senclaw autostart:", err)
						return cli.ExitFailure
					}
					if *jsonOut {
						return cli.PrintJSON(x.io.Out, st)
					}
					switch {
					case st.Enabled && st.Foreign:
						fmt.Fprintf(x.io.Out, "starts at login, through %s (not written by senclaw: Exec=%q)\n", st.Path, st.Exec)
					case st.Enabled:
						fmt.Fprintf(x.io.Out, "starts at login (%s)\n", st.Path)
					default:
						fmt.Fprintf(x.io.Out, "does not start at login (no %s)\n", st.Path)
					}
					return 0
				})
			}
		},
	}
}
