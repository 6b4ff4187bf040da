package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestBackgroundRunsHaveNoDeadlineUnlessGiven: a background run outlives
// the sandbox's timeout; a TTL kills it at its time; an idle TTL kills an
// idle one and spares a busy one; the TTLs are refused on foreground runs
// and the timeout on background ones, naming the field.
func TestBackgroundRunsHaveNoDeadlineUnlessGiven(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{TimeoutMs: ptr(1000)})
	if err != nil {
		t.Fatal(err)
	}
	start := func(req RunRequest) RunRecord {
		t.Helper()
		req.Background = true
		res, err := e.Exec(ctx, sb.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Record.Lifetime(), "runs until it exits") {
			t.Fatalf("lifetime %q", res.Record.Lifetime())
		}
		return res.Record
	}
	server := start(RunRequest{Command: "exec sleep 600"})
	ttl := start(RunRequest{Command: "exec sleep 600", TTLMs: 1500})
	idle := start(RunRequest{Command: "exec sleep 600", IdleTTLMs: 2000})
	busy := start(RunRequest{Command: "while :; do :; done", IdleTTLMs: 2000})
	if !strings.Contains(ttl.Lifetime(), "after 1.5s (its TTL)") || !strings.Contains(idle.Lifetime(), "idle TTL") {
		t.Fatalf("lifetimes: %q / %q", ttl.Lifetime(), idle.Lifetime())
	}
	done := func(id string) *RunRecord {
		r, _ := e.Run(id)
		if r != nil && r.State == "done" {
			return r
		}
		return nil
	}
	deadline := time.Now().Add(20 * time.Second)
	for done(ttl.ID) == nil || done(idle.ID) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the TTL and idle TTL runs are still going after 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := done(ttl.ID); !r.TimedOut || r.DurationMs < 1400 {
		t.Errorf("the TTL run: %+v", r)
	}
	if r := done(idle.ID); !strings.Contains(r.Killed, "idle for 2s") || r.DurationMs < 1900 {
		t.Errorf("the idle run: killed %q after %d ms", r.Killed, r.DurationMs)
	}
	// The server and the busy loop outlived the sandbox's 1 s timeout and
	// the idle TTL.
	for _, id := range []string{server.ID, busy.ID} {
		if r := done(id); r != nil {
			t.Errorf("run %s ended: %+v", id, r)
		}
	}
	bg, err := e.BackgroundRuns()
	if err != nil || len(bg) != 2 {
		t.Fatalf("background runs: %v %+v", err, bg)
	}
	if killed, err := e.KillRun(server.ID); err != nil || !killed {
		t.Fatalf("KillRun: %v %v", killed, err)
	}
	testutil.WaitFor(t, 10*time.Second, "the server run to be done", func() bool { return done(server.ID) != nil })
	if r := done(server.ID); !strings.Contains(r.Killed, "killed by the owner") {
		t.Errorf("the killed run: %q", r.Killed)
	}
	if _, err := e.Stop(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct {
		req   RunRequest
		field string
	}{
		{RunRequest{Command: "true", TTLMs: 5000}, "ttlMs"},
		{RunRequest{Command: "true", IdleTTLMs: 5000}, "idleTtlMs"},
		{RunRequest{Command: "true", Background: true, TimeoutMs: 5000}, "timeoutMs"},
		{RunRequest{Command: "true", Background: true, TTLMs: 10}, "ttlMs"},
	} {
		_, err := e.Exec(ctx, sb.ID, bad.req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != bad.field {
			t.Errorf("%+v: %v, want a refusal naming %s", bad.req, err, bad.field)
		}
	}
}

// TestRunLogReadsThroughTheWorkspace reads and pages a background run's
// log, and a link planted in its place is not followed out of the
// workspace.
func TestRunLogReadsThroughTheWorkspace(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "for i in 1 2 3 4 5; do echo line $i; done; exec sleep 600", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Record.ID
	testutil.WaitFor(t, 10*time.Second, "line 5 in the run's log", func() bool {
		l, err := e.ReadRunLog(id, 0, 1000)
		return err == nil && strings.Contains(l.Data, "line 5")
	})
	l, err := e.ReadRunLog(id, -7, 1000)
	if err != nil || l.Data != "line 5\n" || !l.Running {
		t.Fatalf("the log's end: %+v %v", l, err)
	}
	if l, err := e.ReadRunLog(id, 0, 7); err != nil || l.Data != "line 1\n" || l.Size <= 7 {
		t.Fatalf("the log's start: %+v %v", l, err)
	}
	// The sandbox swaps its log for a link to a file outside.
	if _, err := e.Exec(ctx, sb.ID, RunRequest{Command: "rm -f .runs/" + id + ".log; ln -s /etc/shadow .runs/" + id + ".log"}); err != nil {
		t.Fatal(err)
	}
	if l, err := e.ReadRunLog(id, 0, 1000); err == nil && strings.Contains(l.Data, "root:") {
		t.Fatalf("the engine followed a link out of the workspace: %q", l.Data)
	}
	if _, err := e.ReadRunLog(id, 0, MaxLogRead+1); err == nil {
		t.Fatal("a read over MaxLogRead was accepted")
	}
	e.Stop(ctx, sb.ID)
}

// TestARunsLogIsReadAsTheSandboxUser: a background run's log is in its
// workspace, where sandboxed code can put a link or a FIFO in its place
// once the run is over: reading it follows no link (even one to a file
// of the workspace the sandbox user may not read, which the engine could),
// and a FIFO is refused at once instead of hanging the caller.
func TestARunsLogIsReadAsTheSandboxUser(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(sb.Workspace, "root-only")
	must(t, os.WriteFile(secret, []byte("ROOT SECRET"), 0o600))
	for _, tc := range []struct{ name, swap string }{
		{"link_to_a_file_it_may_not_read", `ln -sf ../root-only "$log"`},
		{"fifo", `rm -f "$log" && mkfifo "$log"`},
	} {
		res, err := e.Exec(ctx, sb.ID, RunRequest{Background: true, Command: "echo started"})
		if err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, "the run to be done", func() bool { r, _ := e.Run(res.Record.ID); return r != nil && r.State == "done" })
		rel, _ := filepath.Rel(sb.Workspace, res.Record.LogFile)
		if _, err := e.Exec(ctx, sb.ID, RunRequest{Command: "log=" + rel + "; " + tc.swap}); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var got *RunLog
		go func() {
			defer close(done)
			got, err = e.ReadRunLog(res.Record.ID, 0, 1<<16)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: reading the log hangs", tc.name)
		}
		if err == nil || (got != nil && strings.Contains(got.Data, "SECRET")) {
			t.Errorf("%s: read %+v, %v; want a refusal", tc.name, got, err)
		}
	}
}
