package api

import (
	"fmt"
	"strings"
	"testing"
)

// TestListsArePaged: GET /sandboxes and GET /runs answer a page (?limit,
// ?offset) of what matches ?q, with the total that match; without
// ?limit, /sandboxes lists them all, as existing clients expect.
func TestListsArePaged(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	_, base := tcpServer(t, New(Options{Engine: e, Token: testToken, OnStop: func() {}}))
	for i := 0; i < 25; i++ {
		name := fmt.Sprintf("box-%02d", i)
		if i%5 == 0 {
			name = fmt.Sprintf("web-%02d", i)
		}
		if status, body := do(t, base, call{method: "POST", path: "/api/sandbox/sandboxes", body: map[string]any{"name": name, "backend": "direct"}}); status != 201 {
			t.Fatalf("create: %d %v", status, body)
		}
	}
	list := func(query string) (names []string, total int) {
		t.Helper()
		status, body := do(t, base, call{method: "GET", path: "/api/sandbox/sandboxes" + query})
		if status != 200 {
			t.Fatalf("%s: %d %v", query, status, body)
		}
		for _, sb := range body["sandboxes"].([]any) {
			names = append(names, sb.(map[string]any)["name"].(string))
		}
		return names, int(body["total"].(float64))
	}
	if names, total := list(""); len(names) != 25 || total != 25 {
		t.Fatalf("the default answer: %d sandboxes, total %d; want all 25", len(names), total)
	}
	first, total := list("?limit=10")
	second, _ := list("?limit=10&offset=10")
	last, _ := list("?limit=10&offset=20")
	if len(first) != 10 || len(second) != 10 || len(last) != 5 || total != 25 {
		t.Fatalf("pages of 10: %d, %d, %d (total %d)", len(first), len(second), len(last), total)
	}
	seen := map[string]bool{}
	for _, n := range append(append(first, second...), last...) {
		if seen[n] {
			t.Fatalf("%s is on two pages", n)
		}
		seen[n] = true
	}
	if web, total := list("?q=WEB&limit=2"); len(web) != 2 || total != 5 {
		t.Fatalf("?q=WEB: %v, total %d; want 2 of 5", web, total)
	}

	for i := 0; i < 12; i++ {
		do(t, base, call{method: "POST", path: "/api/sandbox/run-once", body: map[string]any{"backend": "direct", "command": fmt.Sprintf("echo run-%d", i)}})
	}
	status, body := do(t, base, call{method: "GET", path: "/api/sandbox/runs?limit=5&offset=10"})
	if status != 200 || len(body["runs"].([]any)) != 2 || int(body["total"].(float64)) != 12 {
		t.Fatalf("runs page: %d %v", status, body)
	}
	status, body = do(t, base, call{method: "GET", path: "/api/sandbox/runs?q=run-1"})
	if status != 200 || int(body["total"].(float64)) != 3 { // run-1, run-10, run-11
		t.Fatalf("runs matching run-1: %d %v", status, body["total"])
	}
	// A refused run (direct without allowDirect) is found by ?refused.
	s := e.Settings()
	s.AllowDirect = false
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	if status, _ := do(t, base, call{method: "POST", path: "/api/sandbox/run-once", body: map[string]any{"backend": "direct", "command": "echo refused-run"}}); status != 400 && status != 403 {
		t.Fatalf("a direct run without allowDirect: %d", status)
	}
	status, body = do(t, base, call{method: "GET", path: "/api/sandbox/runs?refused=true"})
	if runs, _ := body["runs"].([]any); status != 200 || len(runs) != 1 || !strings.Contains(mustJSON(runs[0]), "refused-run") {
		t.Fatalf("the refused runs: %d %v", status, body)
	}
	for _, bad := range []string{"/api/sandbox/sandboxes?limit=0", "/api/sandbox/sandboxes?offset=-1", "/api/sandbox/runs?limit=5001", "/api/sandbox/runs?refused=maybe"} {
		if status, _ := do(t, base, call{method: "GET", path: bad}); status != 400 {
			t.Errorf("%s: %d, want 400", bad, status)
		}
	}
}

// TestACreationPastTheBoundIs429: the answer names the setting.
func TestACreationPastTheBoundIs429(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	_, base := tcpServer(t, New(Options{Engine: e, Token: testToken, OnStop: func() {}}))
	if status, body := do(t, base, call{method: "PUT", path: "/api/sandbox/settings", body: map[string]any{"maxSandboxes": 1}}); status != 200 {
		t.Fatalf("settings: %d %v", status, body)
	}
	do(t, base, call{method: "POST", path: "/api/sandbox/sandboxes", body: map[string]any{"backend": "direct"}})
	status, body := do(t, base, call{method: "POST", path: "/api/sandbox/sandboxes", body: map[string]any{"backend": "direct"}})
	if status != 429 || body["field"] != "maxSandboxes" {
		t.Fatalf("past the bound: %d %v", status, body)
	}
}
