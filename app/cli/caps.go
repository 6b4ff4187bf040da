package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func capsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "caps [--json]", Short: "what this machine can isolate with",
		Example: examples("senclaw caps", "senclaw caps --json"),
	}
	jsonOut := tableFlags(cmd, x)
	cmd.RunE = x.noArgs("caps", func(c *client.Client) int { return caps(x.ctx, c, *jsonOut, x.io) })
	return cmd
}

// caps executes `senclaw caps`.
func caps(ctx context.Context, cl *client.Client, jsonOut bool, io streams) int {
	c, err := cl.Caps(ctx, true)
	if err != nil {
		say(io.Err, "senclaw caps: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, c)
		return 0
	}
	say(io.Out, "state: %s", c.State)
	say(io.Out, "%s", c.Summary)
	say(io.Out, "")
	tw := table(io)
	row(tw, "BACKEND", "STATE", "VERSION", "ISOLATES", "ENFORCES", "REASON")
	for _, b := range c.Backends {
		row(tw, b.Backend, string(b.State), dash(b.Version), fmt.Sprint(b.Isolates), dash(strings.Join(b.Enforces, ",")), b.Reason)
	}
	for _, f := range c.Facilities {
		row(tw, f.Backend, string(f.State), dash(f.Version), "-", "-", f.Reason)
	}
	tw.Flush()
	if len(c.Engines) > 0 {
		say(io.Out, "")
		enginesTable(io, c.Engines)
	}
	return 0
}
