//go:build linux

package daemon

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRunTimeouts: a run may be given up to 24 hours (--timeout), for
// builds and test suites; more is refused naming the bound. Without
// --timeout a run from a script gets its sandbox's timeout, 60 s by
// default as for REST and MCP, and one a person starts at a terminal
// 10 minutes, which its record says. Before, 30 s was the default and
// 10 minutes the most.
func TestRunTimeouts(t *testing.T) {
	requireTools(t, "bwrap", "script")
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	timeoutOf := func(t *testing.T) int {
		t.Helper()
		_, out, _ := senclaw(t, "runs", "--json", "--limit", "1")
		var recs []struct {
			TimeoutMs int `json:"timeoutMs"`
		}
		if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
			t.Fatalf("runs --json: %v %q", err, out)
		}
		return recs[0].TimeoutMs
	}
	if code, out, errOut := senclaw(t, "run", "--timeout", "2h", "--", "true"); code != 0 {
		t.Fatalf("run --timeout 2h: %d %q %q", code, out, errOut)
	}
	if got := timeoutOf(t); got != 2*3600*1000 {
		t.Errorf("run --timeout 2h got a timeout of %d ms", got)
	}
	if code, _, errOut := senclaw(t, "run", "--timeout", "25h", "--", "true"); code != 2 || !strings.Contains(errOut, "24 h") {
		t.Errorf("run --timeout 25h: exit %d, stderr %q; want a refusal naming 24 h", code, errOut)
	}
	id := strings.TrimSpace(func() string { _, out, _ := senclaw(t, "create", "--name", "t"); return out }())
	if code, _, errOut := senclaw(t, "exec", "--timeout", "3h", id, "--", "true"); code != 0 || timeoutOf(t) != 3*3600*1000 {
		t.Errorf("exec --timeout 3h: exit %d %q, timeout %d", code, errOut, timeoutOf(t))
	}

	// A script (stdin is no terminal here): the sandbox's, 60 s.
	if code, _, errOut := senclaw(t, "run", "--", "true"); code != 0 || timeoutOf(t) != 60000 {
		t.Errorf("run from a script: exit %d %q, timeout %d ms, want 60000", code, errOut, timeoutOf(t))
	}
	// A person at a terminal: script(1) gives the CLI one (the test
	// binary as senclaw).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("script", "-qec", self+" run -- true", os.DevNull)
	cmd.Env = append(os.Environ(), asSenclaw+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run at a terminal: %v %s", err, out)
	}
	if got := timeoutOf(t); got != 10*60*1000 {
		t.Errorf("a run at a terminal without --timeout got %d ms, want 10 minutes", got)
	}
}
