package api

import (
	"context"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/scheduler"
)

// testScheduler is a started scheduler on e, stopped before e closes.
func testScheduler(t *testing.T, e *app.Engine) *scheduler.Scheduler {
	t.Helper()
	sch, err := scheduler.New(scheduler.Options{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	sch.Start(context.Background())
	t.Cleanup(sch.Stop) // cleanups run last first: before the engine's Close
	return sch
}

// TestSchedulesBlackBox drives a schedule through the REST API only:
// refused input, create, list, run now with the switch off and on, the
// history, and delete.
func TestSchedulesBlackBox(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	_, base := tcpServer(t, New(Options{Engine: e, Token: testToken, Scheduler: testScheduler(t, e)}))

	status, body := do(t, base, call{method: "POST", path: "/api/sandbox/schedules", body: map[string]any{"name": "report", "cron": "0 30 9 * * *", "timeZone": "Europe/Berlin", "code": "echo report"}})
	if msg, _ := body["error"].(string); status != 400 || body["field"] != "cron" || !strings.Contains(msg, `did you mean "30 9 * * *"? It would fire at `) {
		t.Fatalf("a six-field expression: %d %v", status, body)
	}
	status, body = do(t, base, call{method: "POST", path: "/api/sandbox/schedules", body: map[string]any{"name": "report", "cron": "30 9 * * 1-5", "timeZone": "Europe/Berlin", "code": "echo report; exit 3"}})
	if status != 201 || !strings.Contains(body["note"].(string), "Scheduler scripts is off") {
		t.Fatalf("create: %d %v", status, body)
	}
	id := body["schedule"].(map[string]any)["id"].(string)
	path := "/api/sandbox/schedules/" + id

	_, list := do(t, base, call{method: "GET", path: "/api/sandbox/schedules"})
	items := list["schedules"].([]any)
	first := items[0].(map[string]any)
	if len(items) != 1 || first["description"] != "on weekdays at 09:30" || first["nextRun"] == nil || first["lastRun"] != nil || first["code"] != nil || first["summary"] != "echo report; exit 3" {
		t.Fatalf("list: %v", list)
	}

	// The switch off: directly on the host, recorded as none; the exit
	// code is the script's.
	status, body = do(t, base, call{method: "POST", path: path + "/run?wait=1"})
	run, _ := body["run"].(map[string]any)
	if status != 200 || body["stdout"] != "report\n" || run["isolation"] != "none" || run["exitCode"] != 3.0 || run["scheduleId"] != id || run["source"] != "scheduler" {
		t.Fatalf("run now, switch off: %d %v", status, body)
	}
	// The switch on with nothing that isolates (this engine has only the
	// direct backend): refused, with the record.
	if status, body := do(t, base, call{method: "PUT", path: "/api/sandbox/exec-policy", body: map[string]any{"schedulerScript": true}}); status != 200 {
		t.Fatalf("policy: %d %v", status, body)
	}
	status, body = do(t, base, call{method: "POST", path: path + "/run?wait=1"})
	if status != 403 || body["refused"] != true || !strings.HasPrefix(body["run"].(map[string]any)["isolation"].(string), "refused: no isolation") {
		t.Fatalf("run now, switch on, nothing isolates: %d %v", status, body)
	}
	_, got := do(t, base, call{method: "GET", path: path})
	last := got["lastRun"].(map[string]any)
	if last["outcome"] != "refused" || got["code"] != "echo report; exit 3" {
		t.Fatalf("get after the refusal: %v", got)
	}
	_, hist := do(t, base, call{method: "GET", path: path + "/history"})
	h := hist["history"].([]any)
	if len(h) != 2 || h[0].(map[string]any)["outcome"] != "refused" || h[1].(map[string]any)["outcome"] != "failed" || h[1].(map[string]any)["reason"] != "exited with 3" {
		t.Fatalf("history: %v", hist)
	}
	status, body = do(t, base, call{method: "PATCH", path: path, body: map[string]any{"paused": true}})
	if status != 200 || body["schedule"].(map[string]any)["nextRun"] != nil {
		t.Fatalf("paused: %d %v", status, body)
	}
	if status, _ := do(t, base, call{method: "DELETE", path: path}); status != 200 {
		t.Fatal("delete")
	}
	if status, _ := do(t, base, call{method: "GET", path: path}); status != 404 {
		t.Fatalf("after delete: %d", status)
	}
}

// A daemon without a scheduler says so instead of pretending.
func TestSchedulesWithoutASchedulerAnswer503(t *testing.T) {
	t.Parallel()
	_, base := tcpServer(t, New(Options{Engine: testEngine(t), Token: testToken}))
	if status, body := do(t, base, call{method: "GET", path: "/api/sandbox/schedules"}); status != 503 || !strings.Contains(body["error"].(string), "scheduler is not running") {
		t.Fatalf("%d %v", status, body)
	}
}
