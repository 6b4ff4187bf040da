package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestRemoteEngineThroughMCP: an agent sees the named engine on
// sbx_capabilities, makes a sandbox there with sbx_create's engine,
// writes, runs and reads back with the same tools as here, and is told
// why an unknown engine or a folder of this machine is refused there.
// The engine runs against the second Docker daemon of
// scripts/docker-remote.sh.
func TestRemoteEngineThroughMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a container on a second Docker daemon; make test-go runs it")
	}
	t.Parallel()
	r := testutil.Remote(t)
	d := startHTTPDaemon(t, nil)
	s := d.engine.Settings()
	s.DefaultImage = "senclaw-test/busybox:latest"
	s.Engines = []app.EngineSettings{{Name: "far", Host: r.Host, CACert: r.CACert, Cert: r.Cert, Key: r.Key}}
	if _, err := d.engine.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	cs := connectHTTP(t, d, nil)

	caps := ok(t, cs, "sbx_capabilities", map[string]any{"refresh": true})
	var far map[string]any
	for _, en := range caps.obj["engines"].([]any) {
		if m := en.(map[string]any); m["name"] == "far" {
			far = m
		}
	}
	if far == nil || far["remote"] != true || far["state"] != "healthy" || far["version"] == "" {
		t.Fatalf("sbx_capabilities' engines: %v", caps.obj["engines"])
	}

	fails(t, cs, "sbx_create", map[string]any{"engine": "nowhere"}, "nowhere")
	src := testDir(t)
	if err := os.WriteFile(filepath.Join(src, "note.txt"), []byte("here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, cs, "sbx_create", map[string]any{"engine": "far", "mounts": []any{map[string]any{"source": src}}}, "cannot be bound on engine far")

	cr := ok(t, cs, "sbx_create", map[string]any{"name": "far-work", "engine": "far"})
	id, _ := cr.obj["sandboxId"].(string)
	t.Cleanup(func() { callTool(t, cs, "sbx_delete", map[string]any{"sandboxId": id, "purge": true}) })
	if id == "" || cr.obj["engine"] != "far" || cr.obj["backend"] != "docker" || cr.obj["workspace"] != "/work" {
		t.Fatalf("sbx_create on engine far: %v", cr.obj)
	}
	if w := ok(t, cs, "sbx_file_write", map[string]any{"sandboxId": id, "path": "in/data.txt", "content": "from the agent\n"}); w.obj["bytes"] != 15.0 {
		t.Fatalf("sbx_file_write: %v", w.obj)
	}
	ex := ok(t, cs, "sbx_exec", map[string]any{"sandboxId": id, "command": "cat in/data.txt; echo made there >out.txt; pwd"})
	if ex.obj["stdout"] != "from the agent\n/work\n" || ex.obj["isolation"] != "docker" {
		t.Fatalf("sbx_exec there: %v", ex.obj)
	}
	if fr := ok(t, cs, "sbx_file_read", map[string]any{"sandboxId": id, "path": "out.txt"}); fr.obj["content"] != "made there\n" {
		t.Fatalf("sbx_file_read: %v", fr.obj)
	}
	if fl := ok(t, cs, "sbx_files", map[string]any{"sandboxId": id, "path": "."}); !strings.Contains(mustJSON(fl.obj), `"name":"out.txt"`) {
		t.Fatalf("sbx_files: %v", fl.obj)
	}
	fails(t, cs, "sbx_file_read", map[string]any{"sandboxId": id, "path": "../etc/passwd"}, "path")
}
