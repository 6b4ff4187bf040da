package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/browser"
	"github.com/senclaw/sandbox/app/client"
)

func openCommand(x *invocation) *cobra.Command {
	return &cobra.Command{
		Use: "open", Short: "open the dashboard in your browser, logged in",
		Long: "The daemon writes an owner-only page (mode 0600, in its 0700 runtime dir) holding a one-time login code in a form that posts " +
			"itself, and senclaw opens that page's path with xdg-open (open on macOS): the code is never on a command line, where every user " +
			"of the machine could read it. The code works once, within 60 seconds; the page is removed once used or expired.",
		Example: examples("senclaw open", "senclaw -v open"),
		RunE: x.noArgs("open", func(c *client.Client) int {
			file, err := c.LoginPage(x.ctx)
			if err != nil {
				fmt.Fprintln(x.io.Err, "senclaw open:", err)
				return exitFor(err)
			}
			if err := browser.Open(file); err != nil {
				fmt.Fprintf(x.io.Err, "senclaw open: %v; open %s in your browser within 60 seconds\n", err, file)
				return ExitFailure
			}
			fmt.Fprintf(x.io.Out, "opened the dashboard's login page %s (it works once, within 60 seconds)\n", file)
			return 0
		}),
	}
}
