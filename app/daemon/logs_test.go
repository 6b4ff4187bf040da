//go:build linux

package daemon

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// logsScript writes lines a while apart and ends on a line with no
// newline, the one `logs -f` used to drop: the one-shot's log went with
// its workspace before the follower read it.
const logsScript = `for i in 1 2 3; do echo line $i; sleep 0.2; done; printf last`

const logsWant = "line 1\nline 2\nline 3\nlast"

// TestLogsOfAnyRun: as with docker logs, `senclaw logs` works on any run
// with output. `logs -f` on a one-shot background run gets every line
// and exits 0, and once it is over `logs RUN` still prints its log (the
// record keeps it); a finished foreground run's logs are its stdout and
// stderr, each on its own stream; a foreground run going on can be
// followed to its end. Before, -f dropped the last line and exited 1
// (`no log of run "… (a one-shot run's log goes …)"`), and a finished
// run was refused ("its output is in its record").
func TestLogsOfAnyRun(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	served := serveInProcess(t, data)
	defer stopServed(t, served)

	t.Run("background one-shot", func(t *testing.T) {
		for i := range 5 { // the race was lost about half the time
			code, out, errOut := senclaw(t, "run", "--background", "--", "sh", "-c", logsScript)
			id := strings.TrimSpace(out)
			if code != 0 || id == "" {
				t.Fatalf("run --background: %d %q %q", code, out, errOut)
			}
			code, out, errOut = senclaw(t, "logs", "-f", id)
			if code != 0 || out != logsWant || !strings.Contains(errOut, "ended with exit code 0") {
				t.Fatalf("try %d: logs -f %s: exit %d, stdout %q (want %q), stderr %q", i, id, code, out, logsWant, errOut)
			}
			if code, out, errOut = senclaw(t, "logs", id); code != 0 || out != logsWant {
				t.Fatalf("logs %s after the end: exit %d, stdout %q, stderr %q", id, code, out, errOut)
			}
			if code, out, _ = senclaw(t, "logs", "--tail", "4", id); code != 0 || out != "last" {
				t.Fatalf("logs --tail 4 %s: exit %d, stdout %q", id, code, out)
			}
			var rec struct {
				Stdout  string `json:"stdout"`
				LogSize int64  `json:"logSize"`
			}
			_, out, _ = senclaw(t, "runs", "--json", "--limit", "1")
			var recs []json.RawMessage
			if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 || json.Unmarshal(recs[0], &rec) != nil {
				t.Fatalf("runs --json: %v %q", err, out)
			}
			if rec.Stdout != logsWant || rec.LogSize != int64(len(logsWant)) {
				t.Fatalf("the record keeps %q (log size %d), want the log %q", rec.Stdout, rec.LogSize, logsWant)
			}
		}
	})

	t.Run("finished foreground", func(t *testing.T) {
		code, _, _ := senclaw(t, "run", "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 3")
		if code != 3 {
			t.Fatalf("run: exit %d, want 3", code)
		}
		id := lastRunID(t)
		code, out, errOut := senclaw(t, "logs", id)
		if code != 0 || out != "to-out\n" || !strings.Contains(errOut, "to-err\n") {
			t.Fatalf("logs %s: exit %d, stdout %q, stderr %q", id, code, out, errOut)
		}
		code, out, errOut = senclaw(t, "logs", "-f", id)
		if code != 0 || out != "to-out\n" || !strings.Contains(errOut, "to-err\n") {
			t.Fatalf("logs -f %s: exit %d, stdout %q, stderr %q", id, code, out, errOut)
		}
	})

	t.Run("foreground going on", func(t *testing.T) {
		done := make(chan int, 1)
		go func() {
			code, _, _ := senclaw(t, "run", "--", "sh", "-c", "echo first; sleep 1.5; "+logsScript)
			done <- code
		}()
		var id string
		testutil.WaitFor(t, 10*time.Second, "the foreground run to start", func() bool {
			_, out, _ := senclaw(t, "runs", "--json", "--limit", "1")
			var recs []struct{ ID, State string }
			if json.Unmarshal([]byte(out), &recs) == nil && len(recs) == 1 && recs[0].State == "running" {
				id = recs[0].ID
			}
			return id != ""
		})
		code, out, errOut := senclaw(t, "logs", "-f", id)
		if code != 0 || out != "first\n"+logsWant || !strings.Contains(errOut, "ended with exit code 0") {
			t.Fatalf("logs -f %s: exit %d, stdout %q, stderr %q", id, code, out, errOut)
		}
		if code := <-done; code != 0 {
			t.Fatalf("the run: exit %d", code)
		}
	})
}

// TestLogsOfAnOrdinaryUsersRun: the same for an ordinary user's engine
// (no cgroups, the real senclaw): a one-shot background run's log is
// followed to its last line and kept once it is over.
func TestLogsOfAnOrdinaryUsersRun(t *testing.T) {
	d := newDesktopUser(t)
	id := strings.TrimSpace(d.mustRun(t, "run", "--background", "--", "sh", "-c", logsScript))
	code, out, errOut := d.senclaw(t, "logs", "-f", id)
	if code != 0 || out != logsWant {
		t.Fatalf("logs -f %s: exit %d, stdout %q (want %q), stderr %q", id, code, out, logsWant, errOut)
	}
	if out := d.mustRun(t, "logs", id); out != logsWant {
		t.Fatalf("logs %s after the end: %q", id, out)
	}
}

// lastRunID is the id of the newest run.
func lastRunID(t *testing.T) string {
	t.Helper()
	_, out, _ := senclaw(t, "runs", "--json", "--limit", "1")
	var recs []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("runs --json: %v %q", err, out)
	}
	return recs[0].ID
}
