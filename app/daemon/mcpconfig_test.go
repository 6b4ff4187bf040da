package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestMCPConfigHasTheRealURLAndKeepsTheFile: the daemon listens on a port
// of its own choosing (not 7878). mcp-config prints that address for each
// client that takes HTTP, and --write puts it into a client's file with
// the file's other content kept, for its owner alone.
func TestMCPConfigHasTheRealURLAndKeepsTheFile(t *testing.T) {
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	var info api.DaemonInfo
	var err error
	testutil.WaitFor(t, 10*time.Second, "the daemon's info file", func() bool {
		info, err = client.ReadDaemonInfo(filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "senclaw"))
		return err == nil
	})
	if err != nil || info.URL == "" || strings.HasSuffix(info.URL, ":7878") {
		t.Fatalf("the daemon's info: %+v %v", info, err)
	}
	for _, name := range []string{"claude-code", "cursor", "generic"} {
		code, out, errOut := senclaw(t, "mcp-config", name)
		var doc struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("%s: %d %s %s", name, code, out, errOut)
		}
		// The client gets an agent token of its own, in both entries,
		// never the owner's; it may not change the policy.
		tok := doc.MCPServers["senclaw"].Env["SENCLAW_TOKEN"]
		if !strings.HasPrefix(tok, "sclw_") || tok == readToken(t) || doc.MCPServers["senclaw-http"].Headers["Authorization"] != "Bearer "+tok || strings.Contains(out, readToken(t)) {
			t.Errorf("%s: the token handed out: %s", name, out)
		}
		agent := client.DialTCP(info.URL, tok)
		if err := agent.Do(context.Background(), "PUT", "/exec-policy", nil, map[string]any{"runPython": false}, nil); err == nil || !strings.Contains(err.Error(), "policy:write") {
			t.Errorf("%s: the handed-out token changing the policy: %v", name, err)
		}
		if doc.MCPServers["senclaw-http"].URL != info.URL+"/mcp" || !strings.HasPrefix(doc.MCPServers["senclaw-http"].Headers["Authorization"], "Bearer ") ||
			doc.MCPServers["senclaw"].Command == "" {
			t.Errorf("%s: %s", name, out)
		}
	}
	if code, out, _ := senclaw(t, "mcp-config", "claude-desktop"); code != 0 || strings.Contains(out, "senclaw-http") || !strings.Contains(out, "sandbox-server") {
		t.Errorf("claude-desktop: %d %s", code, out)
	}

	file := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(file, []byte("{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"other\": {\"command\": \"other-server\"}\n    }\n}\n"), 0o644)
	code, out, errOut := senclaw(t, "mcp-config", "--write", "--file", file, "cursor")
	// The diff shown does not show the token.
	if code != 0 || strings.Contains(out, readToken(t)) {
		t.Fatalf("--write: %d %s %s", code, out, errOut)
	}
	written, _ := os.ReadFile(file)
	var doc map[string]any
	if err := json.Unmarshal(written, &doc); err != nil {
		t.Fatal(err)
	}
	servers, _ := doc["mcpServers"].(map[string]any)
	http, _ := servers["senclaw-http"].(map[string]any)
	if doc["theme"] != "dark" || servers["other"] == nil || http["url"] != info.URL+"/mcp" || !strings.Contains(string(written), "\n    \"theme\"") {
		t.Errorf("the written file:\n%s", written)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("a file with the token is %v", fi.Mode())
	}
	if code, out, _ := senclaw(t, "mcp-config", "--write", "--file", file, "cursor"); code != 0 || !strings.Contains(out, "nothing to change") {
		t.Errorf("a second --write: %d %s", code, out)
	}
}

func readToken(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "senclaw", "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
