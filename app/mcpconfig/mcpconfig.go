// Package mcpconfig writes MCP clients' configuration for this engine.
//
// It names the address the engine really serves.
//
// Each client (Claude Desktop, Claude Code, Cursor, or any other) gets
// the stdio server (senclaw sandbox-server, which reaches the engine over
// its checked Unix socket) and, where the client can use it and the
// engine serves HTTP, the Streamable HTTP server at /mcp of the address
// the running engine listens on, read from its checked info file, never
// a port assumed (a port can be taken by someone else).
package mcpconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/senclaw/sandbox/app/agentshell"
)

// Clients are the client names Servers knows, in the order help lists them.
var Clients = []string{"claude-desktop", "claude-code", "cursor", "generic"}

// Endpoint is what a configuration points at: how an MCP client reaches
// this user's engine.
type Endpoint struct {
	// Senclaw is this senclaw executable's absolute path.
	Senclaw string
	// URL is the dashboard's address the engine listens on ("" when it
	// serves the Unix socket alone).
	URL string
	// Token is the agent token both entries act with: the HTTP entry
	// sends it as its bearer token, the stdio server gets it in its
	// environment (SENCLAW_TOKEN). One function chooses it (app/cli's mcpToken):
	// an agent token made for the client, never the owner's.
	Token string
}

// Names of the entries in mcpServers.
const (
	StdioName = "senclaw"
	HTTPName  = "senclaw-http"
)

// Servers returns the mcpServers entries for client, and notes for the
// person (what was left out and why).
func Servers(client string, e Endpoint) (map[string]json.RawMessage, []string, error) {
	stdio := map[string]any{"command": e.Senclaw, "args": []string{"sandbox-server"}}
	if e.Token != "" {
		// In the environment, never the arguments: every user of the
		// machine can read a command line.
		stdio["env"] = map[string]string{"SENCLAW_TOKEN": e.Token}
	}
	out := map[string]json.RawMessage{StdioName: encode(stdio)}
	var notes []string
	var http map[string]any
	headers := map[string]string{"Authorization": "Bearer " + e.Token}
	switch client {
	case "claude-desktop":
		notes = append(notes, "Claude Desktop's config file takes stdio servers only: it gets senclaw sandbox-server")
		return out, notes, nil
	case "claude-code", "generic":
		http = map[string]any{"type": "http", "url": strings.TrimRight(e.URL, "/") + "/mcp", "headers": headers}
	case "cursor":
		http = map[string]any{"url": strings.TrimRight(e.URL, "/") + "/mcp", "headers": headers}
	default:
		return nil, nil, fmt.Errorf("unknown MCP client %q: use %s", client, strings.Join(Clients, ", "))
	}
	if e.URL == "" {
		notes = append(notes, "the engine does not serve HTTP (started with --listen ''?), so there is no "+HTTPName+" entry; the stdio one works")
		return out, notes, nil
	}
	out[HTTPName] = encode(http)
	return out, notes, nil
}

// Document is the servers as a file of their own: {"mcpServers": {...}}.
func Document(servers map[string]json.RawMessage) []byte {
	data, _ := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	return append(data, '\n')
}

// Target is client's user-wide configuration file; generic has none.
// home is the user's home, configHome $XDG_CONFIG_HOME (or "").
func Target(client, home, configHome string) (agentshell.Target, error) {
	t := agentshell.Target{Agent: client, Scope: "user"}
	switch client {
	case "claude-desktop":
		switch runtime.GOOS {
		case "darwin":
			t.Path = filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
		default:
			if configHome == "" {
				configHome = filepath.Join(home, ".config")
			}
			t.Path = filepath.Join(configHome, "Claude", "claude_desktop_config.json")
		}
	case "claude-code":
		t.Path = filepath.Join(home, ".claude.json") // the user scope of `claude mcp add -s user`
	case "cursor":
		t.Path = filepath.Join(home, ".cursor", "mcp.json")
	case "generic":
		return t, fmt.Errorf("a generic client has no file senclaw knows: give it with --file PATH")
	default:
		return t, fmt.Errorf("unknown MCP client %q: use %s", client, strings.Join(Clients, ", "))
	}
	return t, nil
}

// Plan is what writing servers into t's file does, keeping the file's
// other content (agentshell.PlanKeys), for its owner alone when it gets
// a token.
func Plan(t agentshell.Target, servers map[string]json.RawMessage) (agentshell.Change, error) {
	c, err := agentshell.PlanKeys(t, "mcpServers", servers, false)
	if err != nil {
		return c, err
	}
	if hasToken(servers) {
		c.Private = true
		c.Notes = append(c.Notes, "the file holds the client's agent token: it is written for you alone (mode 0600)")
	}
	return c, nil
}

// KnownToken is the agent token t's file gives the entries Servers makes,
// or "" when it has none (no file, no entry, another form).
func KnownToken(t agentshell.Target) string {
	data, err := os.ReadFile(t.Path)
	if err != nil {
		return ""
	}
	var doc struct {
		MCPServers map[string]struct {
			Env     map[string]string `json:"env"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return ""
	}
	if tok := doc.MCPServers[StdioName].Env["SENCLAW_TOKEN"]; tok != "" {
		return tok
	}
	tok, _ := strings.CutPrefix(doc.MCPServers[HTTPName].Headers["Authorization"], "Bearer ")
	return tok
}

// hasToken reports whether an entry of servers carries a token.
func hasToken(servers map[string]json.RawMessage) bool {
	for _, raw := range servers {
		if strings.Contains(string(raw), "SENCLAW_TOKEN") || strings.Contains(string(raw), "Authorization") {
			return true
		}
	}
	return false
}

func encode(v any) json.RawMessage {
	data, _ := json.Marshal(v)
	return data
}
