package mcp_test

import (
	"strings"
	"testing"
)

// TestToolsSayWhatHappened: the rough edges a first-time agent met in
// the tools, each as it meets it.
func TestToolsSayWhatHappened(t *testing.T) {
	t.Parallel()
	c := startDaemon(t)
	cs := connect(t, c)
	dir := testDir(t)

	// A mount's target is optional, as its description says.
	id := ok(t, cs, "sbx_create", map[string]any{"name": "polish", "mounts": []map[string]any{{"source": dir, "readOnly": true}}}).obj["sandboxId"].(string)
	// language and command together: an error naming both.
	if msg := fails(t, cs, "sbx_run", map[string]any{"language": "python", "code": "1", "command": "true"}, "command"); !strings.Contains(msg, "language") {
		t.Errorf("language with command: %q does not name both fields", msg)
	}
	// Reading an absolute path, or a missing file, says so.
	if msg := fails(t, cs, "sbx_file_read", map[string]any{"sandboxId": id, "path": "/etc/passwd"}, "path"); !strings.Contains(msg, "relative") {
		t.Errorf("an absolute path: %q", msg)
	}
	if msg := fails(t, cs, "sbx_file_read", map[string]any{"sandboxId": id, "path": "nothing.txt"}, "nothing.txt"); strings.Contains(msg, "no file with id") || !strings.Contains(msg, "no file") {
		t.Errorf("a missing file: %q", msg)
	}
	// A background exec is ok, with its run id; its processes show at once.
	bg := ok(t, cs, "sbx_exec", map[string]any{"sandboxId": id, "command": "exec sleep 300", "background": true})
	if bg.obj["ok"] != true || bg.obj["runId"] == "" {
		t.Fatalf("background exec: %v", bg.obj)
	}
	st := ok(t, cs, "sbx_stats", map[string]any{"sandboxId": id})
	procs, _ := st.obj["processes"].([]any)
	found := false
	for _, p := range procs {
		m := p.(map[string]any)
		if strings.Contains(m["command"].(string), "sleep 300") {
			found = true
			for _, k := range []string{"cpuPercent", "rssBytes"} {
				if _, ok := m[k]; !ok {
					t.Errorf("a process has no %s (units on every number): %v", k, m)
				}
			}
		}
	}
	if !found {
		t.Errorf("sbx_stats right after a background start lists %v", procs)
	}
	k := ok(t, cs, "sbx_kill", map[string]any{"sandboxId": id})
	if !strings.Contains(k.text, "sleep 300") && !strings.Contains(k.text, "killed 1") {
		t.Errorf("sbx_kill does not say what it killed: %q %v", k.text, k.obj)
	}
}
