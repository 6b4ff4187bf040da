package mcp

import (
	"testing"

	"github.com/senclaw/sandbox/internal/deptest"
)

// TestTheMCPServerIsAClientOfTheAPI: the MCP tools reach the engine
// through app/client, over the API (in-process for /mcp, over the socket
// for sandbox-server), never through the API server's own code.
func TestTheMCPServerIsAClientOfTheAPI(t *testing.T) {
	t.Parallel()
	deptest.Checker{
		Package: "github.com/senclaw/sandbox/app/mcp",
		BadDeps: map[string]string{
			"github.com/senclaw/sandbox/app/api": "the MCP server is a client of the API; the replies' types are app/apitype's",
		},
	}.Check(t)
}
