package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestCreatingPastTheBoundIsRefused: past maxSandboxes a creation is
// refused with the bound named and how to raise it, nothing is created
// (no record, no workspace), also when many creations race; the bounds
// are validated like other settings.
func TestCreatingPastTheBoundIsRefused(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	s := e.Settings()
	s.MaxSandboxes = 5
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	made, refusedN := 0, 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.Create(context.Background(), directConfig())
			mu.Lock()
			defer mu.Unlock()
			var le *LimitError
			switch {
			case err == nil:
				made++
			case errors.As(err, &le) && le.Setting == "maxSandboxes" && strings.Contains(err.Error(), "raise maxSandboxes in the settings"):
				refusedN++
			default:
				t.Errorf("create: %v", err)
			}
		}()
	}
	wg.Wait()
	if made != 5 || refusedN != 15 {
		t.Fatalf("%d made, %d refused; want 5 and 15", made, refusedN)
	}
	all, _ := e.List()
	entries, _ := os.ReadDir(e.workspacesDir())
	if len(all) != 5 || len(entries) != 5 {
		t.Fatalf("%d sandboxes and %d workspaces after the refusals, want 5", len(all), len(entries))
	}

	for _, tc := range []struct {
		field string
		set   func(*Settings)
	}{
		{"maxSandboxes", func(s *Settings) { s.MaxSandboxes = 0 }},
		{"concurrency", func(s *Settings) { s.Concurrency = 0 }},
		{"queueLength", func(s *Settings) { s.QueueLength = -1 }},
		{"maxBackgroundRuns", func(s *Settings) { s.MaxBackgroundRuns = MaxBackgroundRunsLimit + 1 }},
		{"minFreeDiskMb", func(s *Settings) { s.MinFreeDiskMB = -1 }},
		{"nestedProjectDepth", func(s *Settings) { s.NestedProjectDepth = MaxNestedProjectDepth + 1 }},
		{"nestedProjectLimit", func(s *Settings) { s.NestedProjectLimit = 0 }},
		{"maxRunsPerSandbox", func(s *Settings) { s.MaxRunsPerSandbox = MaxRunsPerSandboxLimit + 1 }},
	} {
		s := e.Settings()
		tc.set(&s)
		var fe *FieldError
		if _, err := e.SetSettings(s); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	if got := e.Settings(); got.MaxSandboxes != 5 || got.Concurrency != defaultConcurrency() || got.QueueLength != DefaultQueueLength || got.MaxRunsPerSandbox != 32 {
		t.Fatalf("a refused change changed the settings: %+v", got)
	}
}

// TestBackgroundRunsPastThePerSandboxBoundAreRefused: 80 background runs
// in one sandbox: the first 32 (maxRunsPerSandbox) run under bwrap, the
// other 48 are refused with the bound named, and recorded as refused;
// once the sandbox is stopped its slots are free again. maxBackgroundRuns
// bounds the background runs of every sandbox together the same way, and
// leaves the foreground runs alone.
func TestBackgroundRunsPastThePerSandboxBoundAreRefused(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	started, refusedN := 0, 0
	for i := 0; i < 80; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "exec sleep 300", Background: true})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && res.Record.State == "running":
				started++
			case IsRefused(err) && strings.Contains(err.Error(), "maxRunsPerSandbox 32") && strings.HasPrefix(res.Record.Isolation, "refused: "):
				refusedN++
			default:
				t.Errorf("run: %v %+v", err, res.Record)
			}
		}()
	}
	wg.Wait()
	if started != 32 || refusedN != 48 {
		t.Fatalf("%d started, %d refused; want 32 and 48", started, refusedN)
	}
	page, err := e.RunsPage(sb.ID, ListQuery{Match: "maxRunsPerSandbox"})
	if err != nil || page.Total != 48 {
		t.Fatalf("%d refused runs recorded, want 48 (%v)", page.Total, err)
	}
	if n, err := e.Stop(ctx, sb.ID); err != nil || n != 32 {
		t.Fatalf("stop: %d %v", n, err)
	}
	e.live.waitSandbox(sb.ID)
	testutil.WaitFor(t, 10*time.Second, "a run in the sandbox to succeed again", func() bool {
		res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "true"})
		return err == nil && res.Record.OK()
	})

	s := e.Settings()
	s.MaxBackgroundRuns = 2
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Command: "exec sleep 300", Background: true}); err != nil {
			t.Fatal(err)
		}
	}
	var le *LimitError
	if _, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Command: "true", Background: true}); !errors.As(err, &le) || le.Setting != "maxBackgroundRuns" || !strings.Contains(err.Error(), "maxBackgroundRuns 2") {
		t.Fatalf("a third background run past maxBackgroundRuns 2: %v", err)
	}
	if res, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Command: "true"}); err != nil || !res.Record.OK() {
		t.Fatalf("a foreground run beside two background ones: %v", err)
	}
	e.StopAll(ctx)
}

// TestRunsWaitInABoundedQueue: past the concurrency runs wait
// for a place, first come first served; past the queue's length they are
// refused (a *LimitError, 429 in the API) and recorded; a caller that
// goes away while its run waits leaves a refused record and nothing else;
// raising the concurrency lets waiting runs in.
func TestRunsWaitInABoundedQueue(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	ctx := context.Background()
	s := e.Settings()
	s.Concurrency, s.QueueLength = 2, 3
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(testDir(t), "gate")
	hold := RunRequest{Command: "while [ ! -e " + gate + " ]; do sleep 0.02; done", TimeoutMs: 60000}
	results := make(chan error, 5)
	for i := 0; i < 5; i++ {
		go func() {
			res, err := e.RunOnce(ctx, directConfig(), hold)
			if err == nil && !res.Record.OK() {
				err = errors.New(res.Record.Error)
			}
			results <- err
		}()
	}
	testutil.WaitFor(t, 10*time.Second, "2 runs running and 3 waiting", func() bool { q := e.Queue(); return q.Running == 2 && q.Waiting == 3 })
	res, err := e.RunOnce(ctx, directConfig(), RunRequest{Command: "true"})
	var le *LimitError
	if !errors.As(err, &le) || le.Setting != "queueLength" || !IsRefused(err) || !strings.Contains(err.Error(), "queueLength 3") {
		t.Fatalf("a run past a full queue: %v", err)
	}
	if rec, err := e.Run(res.Record.ID); err != nil || !strings.HasPrefix(rec.Isolation, "refused: the run queue is full") {
		t.Fatalf("its record: %+v %v", rec, err)
	}
	gone, cancel := context.WithCancel(ctx)
	s.QueueLength = 4
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	left := make(chan *RunResult, 1)
	go func() {
		res, err := e.RunOnce(gone, directConfig(), RunRequest{Command: "touch " + gate + ".never"})
		if !IsRefused(err) {
			t.Errorf("a run whose caller went away: %v", err)
		}
		left <- res
	}()
	testutil.WaitFor(t, 10*time.Second, "4 runs waiting", func() bool { return e.Queue().Waiting == 4 })
	cancel()
	if res := <-left; res == nil || !strings.Contains(res.Record.Error, "went away while the run waited") {
		t.Fatalf("the record of a run whose caller went away: %+v", res)
	}
	s.Concurrency = 5
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "5 runs running and none waiting", func() bool { q := e.Queue(); return q.Running == 5 && q.Waiting == 0 })
	os.WriteFile(gate, nil, 0o644)
	for i := 0; i < 5; i++ {
		if err := <-results; err != nil {
			t.Errorf("a queued run: %v", err)
		}
	}
	if _, err := os.Stat(gate + ".never"); err == nil {
		t.Error("the run whose caller went away ran")
	}
	if q := e.Queue(); q != (QueueStats{}) {
		t.Fatalf("after the runs: %+v", q)
	}
}

// TestAppSandboxesCountTowardsMaxSandboxes: a new Space App's sandbox is
// bounded like any other (an agent registering apps could otherwise make
// sandboxes without end); one that exists is updated at the bound.
func TestAppSandboxesCountTowardsMaxSandboxes(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	s := e.Settings()
	s.MaxSandboxes = 1
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	first := AppSandbox{ID: "app-a", Name: "app:a", Dir: testDir(t)}
	if _, err := e.PutAppSandbox(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	_, err := e.PutAppSandbox(context.Background(), AppSandbox{ID: "app-b", Name: "app:b", Dir: testDir(t)})
	var le *LimitError
	if !errors.As(err, &le) || le.Setting != "maxSandboxes" {
		t.Fatalf("a second app's sandbox past maxSandboxes: %v", err)
	}
	if _, err := e.PutAppSandbox(context.Background(), first); err != nil {
		t.Fatalf("updating the first at the bound: %v", err)
	}
}
