package client

import (
	"testing"

	"github.com/senclaw/sandbox/internal/deptest"
)

// TestTheClientLinksNoEngine: every face that reaches the engine over its
// API (the CLI, the tray, the window, the hooks) links this package, and
// none of them may pay for the engine's packages or be able to call it
// other than through the API.
func TestTheClientLinksNoEngine(t *testing.T) {
	t.Parallel()
	const engine = "a client reaches the engine only through its API; the replies' types are app/apitype's"
	deptest.Checker{
		Package: ".",
		GOOS:    []string{"linux", "darwin", "windows"},
		BadDeps: map[string]string{
			"github.com/senclaw/sandbox/app":           engine,
			"github.com/senclaw/sandbox/app/api":       engine + " (the server's package)",
			"github.com/senclaw/sandbox/app/mcp":       "the MCP server is a face of its own, and links the MCP SDK",
			"github.com/senclaw/sandbox/app/scheduler": engine,
			"github.com/senclaw/sandbox/app/spaceapps": engine,
			"github.com/senclaw/sandbox/app/doctor":    engine,
			"github.com/senclaw/sandbox/app/store":     engine + " (only the engine opens the store)",
			"github.com/senclaw/sandbox/monitor":       "process sampling is the engine's (and links gopsutil)",
			"github.com/senclaw/sandbox/backends/":     "the backends are the engine's; only package backends' types cross the API",
		},
	}.Check(t)
}
