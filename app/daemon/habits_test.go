//go:build linux

package daemon

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestDockerHabits: the verbs and flags people bring from docker and
// the peers work as they expect: exec (run --sandbox), inspect (the
// sandbox, or a run, whole as JSON), stats, ps -a (ended background runs
// too), rm -f (kill, then delete), --allow-domain/--deny-domain on
// create and run, schedules by name, and "no id given" for an empty id
// (before, `logs ""` said no run "log" and `kill ""` got a 405).
func TestDockerHabits(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	must := func(args ...string) string {
		t.Helper()
		code, out, errOut := senclaw(t, args...)
		if code != 0 {
			t.Fatalf("senclaw %s: exit %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}

	id := strings.TrimSpace(must("create", "--name", "hab", "--network", "--allow-domain", "example.org", "--allow-domain", "pypi.org", "--deny-domain", "bad.example"))
	if out := must("exec", "hab", "--", "sh", "-c", "echo in-$PWD"); !strings.Contains(out, "in-") {
		t.Errorf("exec: %q", out)
	}
	if code, _, errOut := senclaw(t, "exec", "hab", "--memory", "64", "--", "true"); code != 2 || !strings.Contains(errOut, "--memory") {
		t.Errorf("exec with a one-shot flag: %d %q", code, errOut)
	}
	var sbs []struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		Ports struct {
			Domains     []string `json:"domains"`
			DenyDomains []string `json:"denyDomains"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(must("inspect", "hab")), &sbs); err != nil || len(sbs) != 1 || sbs[0].ID != id {
		t.Fatalf("inspect hab: %v %+v", err, sbs)
	}
	if d := sbs[0].Ports; strings.Join(d.Domains, ",") != "example.org,pypi.org" || strings.Join(d.DenyDomains, ",") != "bad.example" {
		t.Errorf("create --allow-domain/--deny-domain: the sandbox has %+v", d)
	}
	// A one-shot run with a deny rule: the proxy refuses the name.
	code, out, errOut := senclaw(t, "run", "--network", "--deny-domain", "example.org", "--json", "--", "true")
	if code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Errorf("run --deny-domain: %d %q %q", code, out, errOut)
	}

	// stats of a sandbox with a run going on, once.
	bg := strings.TrimSpace(must("exec", "hab", "--background", "--", "sleep", "30"))
	testutil.WaitFor(t, 10*time.Second, "the background run to show in stats", func() bool {
		_, out, _ := senclaw(t, "stats", "--no-stream")
		return strings.Contains(out, id) && strings.Contains(out, "MiB")
	})
	if out := must("stats", "--no-stream", "hab"); !strings.Contains(out, "CPU %") || !strings.Contains(out, "hab") {
		t.Errorf("stats hab:\n%s", out)
	}
	var recs []json.RawMessage
	if err := json.Unmarshal([]byte(must("inspect", bg)), &recs); err != nil || len(recs) != 1 || !strings.Contains(string(recs[0]), `"background": true`) {
		t.Errorf("inspect RUN: %v %s", err, recs)
	}
	// rm -f kills the run, then deletes.
	if out := must("rm", "-f", "hab"); !strings.Contains(out, "killed 1 runs") || !strings.Contains(out, "deleted hab") {
		t.Errorf("rm -f: %q", out)
	}
	// ps -a lists the ended background run with how it ended.
	if out := must("ps"); strings.Contains(out, bg) {
		t.Errorf("ps lists an ended run:\n%s", out)
	}
	if out := must("ps", "-a"); !strings.Contains(out, bg) || !strings.Contains(out, "killed") {
		t.Errorf("ps -a:\n%s", out)
	}

	// Schedules by name.
	must("schedule", "add", "--name", "nightly", "--cron", "@daily", "--paused", "--", "true")
	if out := must("schedule", "resume", "nightly"); !strings.Contains(out, "nightly") && !strings.Contains(out, "resumed") {
		t.Errorf("schedule resume NAME: %q", out)
	}
	must("schedule", "pause", "nightly")
	must("schedule", "history", "nightly")
	must("schedule", "add", "--name", "nightly", "--cron", "@hourly", "--paused", "--", "true")
	if code, _, errOut := senclaw(t, "schedule", "pause", "nightly"); code == 0 || !strings.Contains(errOut, "2 schedules are named") {
		t.Errorf("a name two schedules have: %d %q", code, errOut)
	}

	// No id given.
	for _, args := range [][]string{{"logs", ""}, {"kill", ""}, {"rm", ""}, {"inspect", ""}, {"exec", "", "--", "true"}, {"schedule", "pause", ""}} {
		code, out, errOut := senclaw(t, args...)
		if code != 2 || !strings.Contains(errOut, "no id given") || strings.Contains(errOut, "405") {
			t.Errorf("senclaw %q: exit %d, stdout %q, stderr %q; want no id given", args, code, out, errOut)
		}
	}
}
