package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/internal/testutil"
)

// syncBuffer is an output writer the test reads while the run writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLaunchedServerOutlivesTheTimeoutAndEndsOnSIGTERM: a supervised
// server runs past its sandbox's timeout, writes to the caller's writer
// (not the workspace), and Terminate lets it run its SIGTERM handler.
func TestLaunchedServerOutlivesTheTimeoutAndEndsOnSIGTERM(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	dir := testDir(t)
	sb, err := e.PutAppSandbox(context.Background(), AppSandbox{ID: "app-t", Name: "app:t", Dir: dir, Config: SandboxConfig{Backend: ptr("direct"), TimeoutMs: ptr(1000)}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Kind != KindApp || sb.Workspace != dir || sb.OwnWorkspace || sb.DiskMB != 0 {
		t.Fatalf("app sandbox %+v", sb)
	}
	out := &syncBuffer{}
	l, err := e.Launch(context.Background(), sb.ID, RunRequest{Source: SourceSpaceApp, Command: `trap 'echo got-term; exit 0' TERM; echo up; while :; do sleep 0.05; done`}, LaunchOptions{Output: out})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "\"up\" in the output", func() bool { return strings.Contains(out.String(), "up") })
	time.Sleep(1500 * time.Millisecond) // past the sandbox's 1 s timeout
	select {
	case <-l.Done():
		t.Fatalf("the server ended at its sandbox's timeout: %+v", l.Result())
	default:
	}
	if rec := l.Record(); rec.Source != SourceSpaceApp || !rec.Background || rec.State != "running" || rec.Isolation != "none (degraded)" {
		t.Fatalf("started record %+v", rec)
	}
	if l.Pid() <= 0 || !slices.Contains(l.Pids(), l.Pid()) {
		t.Fatalf("pid %d, tree %v", l.Pid(), l.Pids())
	}
	if err := l.Terminate("stopped by the test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not end on SIGTERM")
	}
	if !strings.Contains(out.String(), "got-term") {
		t.Fatalf("the server's TERM handler did not run: %q", out.String())
	}
	if res := l.Result(); res.State != "done" || res.Killed != "stopped by the test" {
		t.Fatalf("final record %+v", res)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, ".runs")); len(entries) != 0 {
		t.Fatalf("a log file was written into the app's directory: %v", entries)
	}
	page, _ := e.RunsPage(sb.ID, ListQuery{Limit: 5})
	runs := page.Runs
	if len(runs) != 1 || runs[0].State != "done" || runs[0].Source != SourceSpaceApp {
		t.Fatalf("stored runs %+v", runs)
	}
}

// TestUnconfinedLaunchSaysNone: the documented off path of an app whose
// sandbox is disabled runs with no barrier, says so, and still gets an
// environment built from nothing.
func TestUnconfinedLaunchSaysNone(t *testing.T) {
	e := newTestEngine(t, []backends.Backend{direct.New()}) // allowDirect stays off
	t.Setenv("SENCLAW_TEST_ENGINE_SECRET", "leaked")        // the engine's own environment
	// The test dumps the environment to see it: unconfined, on the
	// host, the shell guard's envDump would refuse that.
	s := e.Settings()
	s.Guard.EnvDump = false
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	dir := testDir(t)
	sb, err := e.PutAppSandbox(context.Background(), AppSandbox{ID: "app-u", Name: "app:u", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	l, err := e.Launch(context.Background(), sb.ID, RunRequest{Command: "env; echo end", Env: map[string]string{"HOME": dir}}, LaunchOptions{Output: out, Unconfined: true})
	if err != nil {
		t.Fatal(err)
	}
	<-l.Done()
	if rec := l.Record(); rec.Isolation != "none" || rec.Backend != "direct" {
		t.Fatalf("record %+v", rec)
	}
	got := out.String()
	if strings.Contains(got, "leaked") || !strings.Contains(got, "HOME="+dir) || !strings.Contains(got, "end") {
		t.Fatalf("environment %q", got)
	}
}

// TestAppSandboxAPIAccessNamesTheAPIPortOnlyWhenAsked: the engine's API
// port, which no loopback rule may name, is added for an app with API
// access, and for no other.
func TestAppSandboxAPIAccessNamesTheAPIPortOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	e.ProtectPort(7878)
	if _, err := e.Create(context.Background(), SandboxConfig{Loopback: []int{7878}}); err == nil {
		t.Fatal("a sandbox named the API port in its loopback rules")
	}
	dir := testDir(t)
	with, err := e.PutAppSandbox(context.Background(), AppSandbox{ID: "app-a", Dir: dir, APIAccess: true, Config: SandboxConfig{Loopback: []int{5432}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(with.Ports.Loopback, []int{5432, 7878}) || !with.APIAccess {
		t.Fatalf("with API access: %+v", with.Ports)
	}
	if r, _ := e.netRules("app-a"); !r.ReachAPI {
		t.Fatal("the proxy does not let the app reach the API")
	}
	without, err := e.PutAppSandbox(context.Background(), AppSandbox{ID: "app-a", Dir: dir, Config: SandboxConfig{Loopback: []int{5432}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(without.Ports.Loopback, []int{5432}) || without.APIAccess {
		t.Fatalf("without API access: %+v", without.Ports)
	}
	if r, _ := e.netRules("app-a"); r.ReachAPI {
		t.Fatal("the proxy still lets the app reach the API")
	}
	if _, err := e.PutAppSandbox(context.Background(), AppSandbox{ID: "app-a", Dir: dir, Config: SandboxConfig{Loopback: []int{7878}}}); err == nil {
		t.Fatal("an app without API access named the API port")
	}
}

// A Space App's sandbox is changed and removed through its app only: the
// generic update and delete refuse it, saying where to go, and the app's
// own removal works.
func TestAnAppsSandboxGoesWithItsApp(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	dir := testDir(t)
	sb, err := e.PutAppSandbox(context.Background(), AppSandbox{ID: "app-n", Name: "app:notes", Dir: dir, Config: SandboxConfig{Backend: ptr("direct")}})
	if err != nil {
		t.Fatal(err)
	}
	var c *ConflictError
	if _, err := e.Delete(context.Background(), sb.ID, true); !errors.As(err, &c) || !strings.Contains(err.Error(), "senclaw apps rm notes") {
		t.Fatalf("delete: %v", err)
	}
	if _, err := e.Update(sb.ID, SandboxConfig{MemoryMB: ptr(64)}); !errors.As(err, &c) || !strings.Contains(err.Error(), "senclaw apps sandbox notes") {
		t.Fatalf("update: %v", err)
	}
	if err := e.DeleteAppSandbox(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the app's directory went with its sandbox: %v", err)
	}
	if _, err := e.Get(sb.ID); err == nil {
		t.Fatal("the sandbox is still there")
	}
}
