package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func urlCommand(x *invocation) *cobra.Command {
	return &cobra.Command{
		Use: "url", Short: "print a one-time dashboard login link, to copy",
		Long: "The link logs a browser in once, within 60 seconds; run it again for another. Never put it on a command line " +
			"(xdg-open \"$(senclaw url)\", a browser's argument): every user of this machine can read command lines (ps) and log in " +
			"before you. Copy it into a browser, or use senclaw open, which hands the browser an owner-only page instead.",
		Example: examples("senclaw url", "senclaw url | wl-copy   # paste it into the browser's address bar"),
		RunE: x.noArgs("url", func(c *client.Client) int {
			d, _ := x.dirs()
			info, err := client.ReadDaemonInfo(d.Runtime)
			if err != nil || info.URL == "" {
				fmt.Fprintln(x.io.Err, "senclaw url: the daemon does not serve the dashboard over HTTP (start it with `senclaw serve --listen 127.0.0.1:7878`, or see its note: another user may hold the port)")
				return ExitFailure
			}
			u, err := c.LoginURL(x.ctx, info.URL)
			if err != nil {
				fmt.Fprintln(x.io.Err, "senclaw url:", err)
				return exitFor(err)
			}
			fmt.Fprintln(x.io.Out, u)
			return 0
		}),
	}
}
