package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScheduleCLI drives `senclaw schedule` against a daemon served
// in-process: a wrong expression refused with the field and a correction,
// add in each of its three forms, ls, run with the script's exit code,
// pause and resume, history, rm.
func TestScheduleCLI(t *testing.T) {
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))

	code, _, errOut := senclaw(t, "schedule", "add", "--name", "bad", "--cron", "0 25 * * *", "--", "true")
	if code != 2 || !strings.Contains(errOut, "hour (2nd field)") || !strings.Contains(errOut, `did you mean "0 23 * * *"`) {
		t.Fatalf("a bad expression: %d %q", code, errOut)
	}
	if code, _, errOut := senclaw(t, "schedule", "add", "--name", "none", "--cron", "@daily"); code != 2 || !strings.Contains(errOut, "exactly one of") {
		t.Fatalf("nothing to run: %d %q", code, errOut)
	}
	code, out, errOut := senclaw(t, "schedule", "add", "--name", "cmd", "--cron", "30 9 * * 1-5", "--tz", "Europe/Berlin", "--timeout", "5m", "--env", "WHO=cli", "--", "sh", "-c", "echo hello $WHO; exit 4")
	id := strings.TrimSpace(out)
	if code != 0 || id == "" || !strings.Contains(errOut, "on weekdays at 09:30") || !strings.Contains(errOut, "Scheduler scripts is off") {
		t.Fatalf("add a command: %d %q %q", code, out, errOut)
	}
	dir := t.TempDir()
	script, code1 := filepath.Join(dir, "s.sh"), filepath.Join(dir, "c.py")
	os.WriteFile(script, []byte("echo from a file\n"), 0o644)
	os.WriteFile(code1, []byte("print(6*7)\n"), 0o644)
	if code, _, errOut := senclaw(t, "schedule", "add", "--name", "file", "--cron", "@hourly", "--file", script); code != 0 {
		t.Fatalf("add --file: %d %q", code, errOut)
	}
	code, out, errOut = senclaw(t, "schedule", "add", "--name", "py", "--cron", "@every 90s", "--paused", "--language", "python", "--code-file", code1)
	pyID := strings.TrimSpace(out)
	if code != 0 || !strings.Contains(errOut, "next run paused") {
		t.Fatalf("add python: %d %q %q", code, out, errOut)
	}

	code, out, _ = senclaw(t, "schedule", "ls", "--json")
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 3 {
		t.Fatalf("ls --json: %d %q", code, out)
	}
	if list[0]["name"] != "cmd" || list[0]["timeoutMs"] != 300000.0 || list[0]["nextRun"] == nil || list[2]["paused"] != true {
		t.Fatalf("ls: %v", list)
	}
	if code, out, _ := senclaw(t, "schedule", "ls"); code != 0 || !strings.Contains(out, "every 90 seconds") || !strings.Contains(out, "paused") {
		t.Fatalf("ls: %d %q", code, out)
	}

	if code, out, _ := senclaw(t, "schedule", "run", id); code != 4 || out != "hello cli\n" {
		t.Fatalf("run: exit %d, stdout %q; want the script's 4", code, out)
	}
	if code, out, _ := senclaw(t, "schedule", "run", pyID); code != 0 || out != "42\n" {
		t.Fatalf("run a paused python schedule: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "schedule", "pause", id); code != 0 || !strings.Contains(out, "paused") {
		t.Fatalf("pause: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "schedule", "resume", id); code != 0 || !strings.Contains(out, "resumed: next run") {
		t.Fatalf("resume: %d %q", code, out)
	}
	code, out, _ = senclaw(t, "schedule", "history", id)
	if code != 0 || !strings.Contains(out, "manual") || !strings.Contains(out, "failed") || !strings.Contains(out, "exited with 4") || !strings.Contains(out, "none") {
		t.Fatalf("history: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "runs", "--json", "--limit", "1"); code != 0 || !strings.Contains(out, `"source": "scheduler"`) || !strings.Contains(out, `"scheduleId": "`+pyID+`"`) {
		t.Fatalf("runs: %d %q", code, out)
	}
	if code, _, errOut := senclaw(t, "schedule", "rm", id, "nope"); code != 2 || !strings.Contains(errOut, `no schedule with id "nope"`) {
		t.Fatalf("rm: %d %q", code, errOut)
	}
	if code, out, _ := senclaw(t, "schedule", "ls", "--json"); code != 0 || strings.Contains(out, id) {
		t.Fatalf("after rm: %q", out)
	}
}
