package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run past a full queue is answered 429 with the bound named (field
// queueLength), refused, and its record.
func TestAFullQueueAnswers429(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	s := e.Settings()
	s.Concurrency, s.QueueLength = 1, 1
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	_, base := tcpServer(t, New(Options{Engine: e, Token: testToken}))
	gate := filepath.Join(testDir(t), "gate")
	hold := map[string]any{"backend": "direct", "command": "while [ ! -e " + gate + " ]; do sleep 0.02; done"}
	done := make(chan int, 2)
	for i := 0; i < 2; i++ {
		go func() {
			status, _ := do(t, base, call{method: "POST", path: "/api/sandbox/run-once", body: hold})
			done <- status
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); e.Queue().Waiting != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the queue: %+v", e.Queue())
		}
	}
	status, body := do(t, base, call{method: "POST", path: "/api/sandbox/run-once", body: map[string]any{"backend": "direct", "command": "true"}})
	run, _ := body["run"].(map[string]any)
	if status != 429 || body["field"] != "queueLength" || body["refused"] != true || run == nil || !strings.Contains(body["error"].(string), "the run queue is full") {
		t.Fatalf("past a full queue: %d %v", status, body)
	}
	os.WriteFile(gate, nil, 0o644)
	for i := 0; i < 2; i++ {
		if status := <-done; status != 200 {
			t.Errorf("a held run: %d", status)
		}
	}
}
