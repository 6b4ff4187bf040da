package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// A foreground run is on disk as running while it goes (once only
// background runs were, so an engine crash left no record of the others).
func TestAForegroundRunIsRecordedWhileItGoes(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	done := make(chan *RunResult, 1)
	go func() {
		res, _ := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Command: "sleep 30", Source: SourceREST})
		done <- res
	}()
	var live *liveRun
	deadline := time.Now().Add(20 * time.Second)
	for live == nil && time.Now().Before(deadline) {
		if all := e.live.all(); len(all) > 0 {
			live = all[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	if live == nil {
		t.Fatal("the run did not start")
	}
	rec, err := e.Run(live.id)
	if err != nil || rec.State != "running" || rec.Kind != "oneshot" {
		t.Fatalf("the record of a going foreground run: %+v, %v", rec, err)
	}
	e.KillRun(live.id)
	if res := <-done; res == nil || res.Record.State != "done" {
		t.Fatalf("after the kill: %+v", res)
	}
}

// At start, a run an earlier engine left running is closed as killed, and
// what it left goes: its one-shot workspace and its cgroups, with the
// process still in them.
func TestAStartRemovesWhatACrashedRunLeft(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	opts := e.opts
	sbID, runID := "oneshot"+randomHex(4), e.newRunID()
	ws := filepath.Join(e.workspacesDir(), sbID)
	if err := os.MkdirAll(filepath.Join(ws, "deep"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "deep", "f"), []byte("left"), 0o600)
	rec := RunRecord{ID: runID, SandboxID: sbID, Kind: "oneshot", State: "running", Source: SourceREST, StartedAt: time.Now()}
	if err := e.store.PutRun(runID, sbID, rec); err != nil {
		t.Fatal(err)
	}
	orphan := testutil.LeftRun(t, sbID, runID)
	e.Close()

	e2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	got, err := e2.Run(runID)
	if err != nil || got.State != "done" || got.Killed != killedByCrash {
		t.Fatalf("record after restart: %+v, %v", got, err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("the one-shot workspace is still there: %v", err)
	}
	testutil.CheckLeftRunGone(t, orphan, sbID, runID)
}
