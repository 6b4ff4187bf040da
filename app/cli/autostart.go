package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func autostartCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "autostart [on|off] [--json]", Short: "show or set whether the desktop app starts at login",
		Long: "On writes ~/.config/autostart/senclaw.desktop (it starts this senclaw at login); off removes it. The dashboard's Defaults card and the tray's Start at login show and change the same file.",
		Example: examples(
			"senclaw autostart",
			"senclaw autostart on",
			"senclaw autostart off",
		),
	}
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.action(func(args []string) int {
		var want *bool
		switch {
		case len(args) == 0:
		case len(args) == 1 && (args[0] == "on" || args[0] == "off"):
			on := args[0] == "on"
			want = &on
		default:
			fmt.Fprintf(x.io.Err, "senclaw autostart: give on, off or nothing, got %q\n", args)
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int {
			st, err := c.Autostart(x.ctx)
			if err == nil && want != nil {
				st, err = c.SetAutostart(x.ctx, *want)
			}
			if err != nil {
				fmt.Fprintln(x.io.Err, "senclaw autostart:", err)
				return ExitFailure
			}
			if *jsonOut {
				writeJSON(x.io.Out, st)
				return 0
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
	})
	return cmd
}
