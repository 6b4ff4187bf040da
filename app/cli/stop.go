package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func stopCommand(x *invocation) *cobra.Command {
	return &cobra.Command{
		Use: "stop", Short: "stop the daemon (its runs are killed, its state kept)",
		Example: examples("senclaw stop", "senclaw stop && senclaw caps   # a fresh daemon"),
		RunE: x.action(func(args []string) int {
			if len(args) > 0 {
				fmt.Fprintf(x.io.Err, "senclaw stop: it takes no arguments, got %q\n", args)
				return ExitUsage
			}
			d, err := x.dirs()
			if err != nil {
				fmt.Fprintln(x.io.Err, "senclaw:", err)
				return ExitFailure
			}
			return stopDaemon(x.ctx, d.Runtime, x.io)
		}),
	}
}
