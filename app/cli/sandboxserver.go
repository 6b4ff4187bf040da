package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
)

func sandboxServerCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "sandbox-server [--tenant NAME]", Short: "MCP server over stdio (the sbx_* tools) for agent clients",
		Long: "stdout carries the MCP protocol only; logs go to stderr. A client of the daemon: it starts a headless one when none answers. " +
			"It acts as an agent, never as the owner: with SENCLAW_TOKEN's agent or tenant token (senclaw mcp-config puts one made for the client in its " +
			"configuration), else with the agent token sandbox-server that the owner's CLI makes once and keeps in the config dir. --tenant NAME acts as that " +
			"tenant's agent. An agent may do what the tools do inside the policy, never change it. Configure an MCP client with senclaw mcp-config.",
		Example: examples("senclaw sandbox-server", "senclaw -v sandbox-server 2>mcp.log", "senclaw sandbox-server --tenant alice"),
	}
	tenant := cmd.Flags().String("tenant", "", "act as an agent of tenant `NAME` (senclaw tenants ls): its objects, quotas and tool policy")
	cmd.RunE = x.action(func(args []string) int {
		if len(args) > 0 {
			fmt.Fprintf(x.io.Err, "senclaw sandbox-server: it takes no arguments, got %q\n", args)
			return ExitUsage
		}
		// The MCP SDK is the engine's executable's: senclaw execs it
		// before it connects.
		return x.hostEngine("sandbox-server", func(e Hosting) int {
			return x.withClient(func(c *client.Client) int {
				d, _ := x.dirs()
				face := "sandbox-server"
				if *tenant != "" {
					face += ":" + *tenant
				}
				ac, err := x.asAgent(c, face, *tenant)
				if err != nil {
					fmt.Fprintln(x.io.Err, "senclaw sandbox-server:", err)
					return exitFor(err)
				}
				redial := func(ctx context.Context) (*client.Client, error) {
					nc, err := x.connect(ctx, d, x.io.Err)
					if err != nil {
						return nil, err
					}
					return nc.WithToken(ac.Token()), nil
				}
				return e.SandboxServer(x.ctx, x.host(), ac, redial)
			})
		})
	})
	return cmd
}
