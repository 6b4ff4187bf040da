package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func traceCommand(x *invocation) *cobra.Command {
	verb := func(on bool) *cobra.Command {
		name, summary := "on", "trace every later run of a sandbox"
		if !on {
			name, summary = "off", "stop tracing a sandbox's runs"
		}
		return &cobra.Command{
			Use: name + " ID", Short: summary,
			Example: examples("senclaw trace "+name+" 3f9c2a", "senclaw trace "+name+" build"),
			RunE: x.action(func(args []string) int {
				if len(args) != 1 {
					fmt.Fprintf(x.io.Err, "senclaw trace %s: give one sandbox id (senclaw ls lists them)\n", name)
					return ExitUsage
				}
				return x.withClient(func(c *client.Client) int { return trace(x.ctx, c, []string{name, args[0]}, x.io) })
			}),
		}
	}
	cmd := &cobra.Command{
		Use: "trace on|off ID", Short: "trace a sandbox's later runs (files, processes, connections)",
		Long:    "Tracing is for review, not security evidence. Read what a traced run did with senclaw events RUN; trace a single run with senclaw run --trace.",
		Example: examples("senclaw trace on 3f9c2a", "senclaw trace off 3f9c2a"),
		RunE:    verbs,
	}
	cmd.AddCommand(verb(true), verb(false))
	return cmd
}

// trace executes `senclaw trace on|off SANDBOX`.
func trace(ctx context.Context, c *client.Client, args []string, io streams) int {
	if len(args) != 2 || (args[0] != "on" && args[0] != "off") {
		say(io.Err, "senclaw trace: usage: senclaw trace on|off SANDBOX")
		return ExitUsage
	}
	res, err := c.SetTracing(ctx, args[1], args[0] == "on")
	if err != nil {
		say(io.Err, "senclaw trace: %v", err)
		return exitFor(err)
	}
	say(io.Out, "tracing of %s is %s", args[1], res.Tracing)
	if res.Note != "" {
		say(io.Err, "senclaw: note: %v", res.Note)
	}
	return 0
}
