package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/store"
)

// rawControls are characters no CLI output may carry from a sandbox or an
// agent: ESC (CSI, OSC), BEL, CR, the bidi override U+202E and the C1 CSI.
const rawControls = "\x1b\x07\r\u202e\u009b"

// TestTheCLIEscapesWhatSandboxesChose traces a run whose command creates a
// file named with terminal sequences (an OSC retitling the terminal, CSI
// 8m hiding what follows, CR overwriting the line, a bidi override) and
// checks that `senclaw runs`, `senclaw events` and `senclaw ls` (of a
// sandbox stored with such a name before names were checked), and an
// error quoting such a value, show them escaped.
func TestTheCLIEscapesWhatSandboxesChose(t *testing.T) {
	requireTools(t, "bwrap", "strace")
	data := cliEnv(t)
	evil := "f\x1b]0;pwned\x07\x1b[8mhidden\rX\u202etxt.exe\u009b31m"
	seedSandbox(t, data, app.Sandbox{ID: "seeded", Name: "old" + evil, Backend: "bwrap", FsMode: "strict",
		Workspace: filepath.Join(data, "workspaces", "seeded"), State: app.StateIdle, Env: map[string]string{}})
	seedSchedule(t, data, map[string]any{"id": "s1", "name": "job" + evil, "cron": "0 3 * * *", "timeZone": "UTC",
		"language": "bash", "code": "true", "env": map[string]string{}, "timeoutMs": 60000, "missed": "skip",
		"history": []map[string]any{{"at": "2026-01-01T03:00:00Z", "trigger": "schedule", "outcome": "refused", "reason": "why" + evil}}})
	served := serveInProcess(t, data)
	defer stopServed(t, served)

	if code, _, errOut := senclaw(t, "run", "--trace", "--", "touch", evil); code != 0 {
		t.Fatalf("traced run: %d %q", code, errOut)
	}
	code, out, _ := senclaw(t, "runs", "--json", "--limit", "1")
	var runs []app.RunRecord
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 {
		t.Fatalf("runs --json: %d %q", code, out)
	}
	checks := []struct {
		name string
		args []string
		want string // the escaped sequence that must show
	}{
		{"runs", []string{"runs", "--limit", "1"}, `\x1b]0;pwned\a`},
		{"events", []string{"events", runs[0].ID}, `\x1b]0;pwned\a\x1b[8mhidden\rX\u202etxt.exe\u009b31m`},
		{"ls", []string{"ls"}, `old` + `f\x1b]0;pwned\a`},
		{"error_quoting_a_value", []string{"events", "r" + evil}, ""},
		{"schedule_ls", []string{"schedule", "ls"}, `job` + `f\x1b]0;pwned\a`},
		{"schedule_history", []string{"schedule", "history", "s1"}, `why` + `f\x1b]0;pwned\a`},
	}
	for _, c := range checks {
		_, out, errOut := senclaw(t, c.args...)
		if strings.ContainsAny(out+errOut, rawControls) {
			t.Errorf("%s prints raw control characters: %q %q", c.name, out, errOut)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%s does not show %s escaped: %q %q", c.name, c.want, out, errOut)
		}
	}
}

// seedSchedule stores a schedule's document in data's database before
// any engine opens it: one saved before its name was checked.
func seedSchedule(t *testing.T, data string, doc map[string]any) {
	t.Helper()
	st, err := store.Open(filepath.Join(data, "senclaw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutSchedule(doc["id"].(string), doc); err != nil {
		t.Fatal(err)
	}
}

// seedSandbox stores sb in data's database before any engine opens it: a
// record saved by an engine that did not check names yet.
func seedSandbox(t *testing.T, data string, sb app.Sandbox) {
	t.Helper()
	if err := os.MkdirAll(sb.Workspace, 0o711); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(data, "senclaw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutSandbox(sb.ID, sb); err != nil {
		t.Fatal(err)
	}
}
