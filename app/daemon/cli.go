package daemon

import (
	"context"
	"fmt"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/mcp"
	"github.com/senclaw/sandbox/internal/version"
)

// Hosting runs the CLI's commands that host the engine (cli.Hosting):
// the senclaw-engine executable gives it to cli.Main.
type Hosting struct{}

var _ cli.Hosting = Hosting{}

// Serve is `senclaw serve`.
func (Hosting) Serve(ctx context.Context, h cli.Host, o cli.ServeOptions) int {
	return serve(ctx, h, o)
}

// Desktop is `senclaw` with no command.
func (Hosting) Desktop(ctx context.Context, h cli.Host) int { return runDesktop(ctx, h) }

// SandboxServer is `senclaw sandbox-server`: the MCP tools over stdio,
// reaching the daemon through c.
func (Hosting) SandboxServer(ctx context.Context, h cli.Host, c *client.Client, redial func(context.Context) (*client.Client, error)) int {
	if err := mcp.ServeStdio(ctx, mcp.Options{Client: c, Redial: redial, Version: version.Version(), Logger: h.Logger}); err != nil {
		fmt.Fprintln(h.Stderr, "senclaw sandbox-server:", err)
		return cli.ExitFailure
	}
	return 0
}
