package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// aheadEngine is a bwrap engine that keeps n one-shot sandboxes ready,
// and waits until they are.
func aheadEngine(t *testing.T, n int, opts ...engineOpt) *Engine {
	t.Helper()
	e := bwrapEngine(t, append(opts, func(o *Options) { o.AheadOneShots = n })...)
	waitReady(t, e, n)
	return e
}

// waitReady waits until e has n sandboxes ready.
func waitReady(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		e.ahead.mu.Lock()
		got, making, why := len(e.ahead.ready), e.ahead.making, e.ahead.why
		e.ahead.mu.Unlock()
		if got == n && making == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sandboxes ready (%d being made): %s", got, n, making, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A plain one-shot takes a sandbox made ahead and gets what any run gets:
// its output, exit code, a record with the isolation and limits, its own
// workspace removed after it; a missing command still says so with 127.
func TestAOneShotRunsInASandboxMadeAhead(t *testing.T) {
	e := aheadEngine(t, 1)
	plain := bwrapEngine(t)
	ctx := context.Background()
	req := RunRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2; pwd; exit 3"}}
	res, err := e.RunOnce(ctx, SandboxConfig{}, req)
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	if rec.AheadID == "" {
		t.Fatalf("the run did not take the sandbox made ahead: %+v", rec)
	}
	ws := strings.TrimSpace(strings.Split(res.Stdout, "\n")[1])
	if rec.ExitCode == nil || *rec.ExitCode != 3 || !strings.HasPrefix(res.Stdout, "out\n") || res.Stderr != "err\n" {
		t.Errorf("result: %+v stdout %q stderr %q", rec, res.Stdout, res.Stderr)
	}
	if rec.ID == rec.AheadID || rec.Kind != "oneshot" || rec.SandboxName != "one-shot" || rec.Backend != "bwrap" {
		t.Errorf("record: %+v", rec)
	}
	// The same run without a sandbox made ahead says the same of itself.
	want, err := plain.RunOnce(ctx, SandboxConfig{}, req)
	if err != nil {
		t.Fatal(err)
	}
	if want.Record.Isolation != rec.Isolation || strings.Join(want.Record.Enforced, "|") != strings.Join(rec.Enforced, "|") ||
		strings.Join(want.Record.Missing, "|") != strings.Join(rec.Missing, "|") {
		t.Errorf("made ahead:\n%q\n%q\n%q\nas usual:\n%q\n%q\n%q", rec.Isolation, rec.Enforced, rec.Missing,
			want.Record.Isolation, want.Record.Enforced, want.Record.Missing)
	}
	stored, err := e.Run(rec.ID)
	if err != nil || stored.AheadID != rec.AheadID || stored.State != "done" {
		t.Errorf("stored record: %+v %v", stored, err)
	}
	waitGone(t, ws)
	waitReady(t, e, 1) // made again after the run
	// The store knows exactly the sandboxes there are ahead of their runs.
	e.ahead.mu.Lock()
	readyID := e.ahead.ready[0].sb.ID
	e.ahead.mu.Unlock()
	if got := e.aheadSandboxes(); len(got) != 1 || !got[readyID] || got[rec.SandboxID] {
		t.Errorf("the store's sandboxes made ahead are %v, want only %s", got, readyID)
	}
	res, err = e.RunOnce(ctx, SandboxConfig{}, RunRequest{Argv: []string{"no-such-command-here"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.AheadID == "" || res.Record.ExitCode == nil || *res.Record.ExitCode != 127 ||
		res.Stderr != "senclaw: not found in the sandbox: no-such-command-here\n" {
		t.Errorf("a missing command: %+v %q", res.Record, res.Stderr)
	}
}

func waitGone(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%s is still there", path)
}

// The switches govern a run in a sandbox made ahead as any other: one
// made before Run Python was switched off is given up, Python is refused
// at the gate, and the interpreter is masked in the sandbox that replaces
// it.
func TestSandboxesMadeAheadFollowTheSwitches(t *testing.T) {
	e := aheadEngine(t, 1)
	ctx := context.Background()
	pol := e.Policy()
	pol.RunPython = false
	if _, err := e.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e, 1)
	res, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Argv: []string{"python3", "-c", "print(1)"}})
	if err == nil || res == nil || res.Record.AheadID != "" || !strings.HasPrefix(res.Record.Isolation, "refused: ") {
		t.Fatalf("Python with Run Python off: %+v %v", res, err)
	}
	// The refusal names a sandbox that never was, as run()'s do; the one
	// it took is back for the next run.
	if stock := e.aheadSandboxes(); stock[res.Record.SandboxID] || len(stock) != 1 {
		t.Errorf("the refused run names sandbox %s; made ahead: %v", res.Record.SandboxID, stock)
	}
	waitReady(t, e, 1)
	res, err = e.RunOnce(ctx, SandboxConfig{}, RunRequest{Argv: []string{"sh", "-c", "exec /usr/bin/python3 -c 'print(1)'"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.AheadID == "" || res.Record.ExitCode == nil || *res.Record.ExitCode == 0 || strings.Contains(res.Stdout, "1") {
		t.Errorf("the interpreter ran in a sandbox made ahead with Run Python off: %+v %q %q", res.Record, res.Stdout, res.Stderr)
	}
}

// Only a run whose sandbox would be the one made ahead takes it: a name
// and a timeout are the run's own; network, mounts, environment, limits,
// code and background runs start as usual.
func TestOnlyAPlainOneShotTakesASandboxMadeAhead(t *testing.T) {
	e := aheadEngine(t, 1)
	ctx := context.Background()
	mounted := testDir(t)
	os.Chmod(mounted, 0o755) // read-only: any sandbox's user reads it
	for _, c := range []struct {
		name string
		cfg  SandboxConfig
		req  RunRequest
	}{
		{"network", SandboxConfig{Network: ptr(true)}, RunRequest{Argv: []string{"true"}}},
		{"a mount", SandboxConfig{Mounts: []backends.Mount{{Source: mounted, Target: "m", ReadOnly: true}}}, RunRequest{Argv: []string{"true"}}},
		{"the sandbox's env", SandboxConfig{Env: map[string]string{"A": "1"}}, RunRequest{Argv: []string{"true"}}},
		{"the run's env", SandboxConfig{}, RunRequest{Argv: []string{"true"}, Env: map[string]string{"A": "1"}}},
		{"a limit", SandboxConfig{MemoryMB: ptr(300)}, RunRequest{Argv: []string{"true"}}},
		{"code", SandboxConfig{}, RunRequest{Language: "bash", Code: "true"}},
		{"a trace", SandboxConfig{}, RunRequest{Argv: []string{"true"}, Trace: true}},
	} {
		res, err := e.RunOnce(ctx, c.cfg, c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Record.AheadID != "" || res.Record.ExitCode == nil || *res.Record.ExitCode != 0 {
			t.Errorf("%s: %+v %q", c.name, res.Record, res.Stderr)
		}
	}
	res, err := e.RunOnce(ctx, SandboxConfig{Name: ptr("named"), TimeoutMs: ptr(1000)}, RunRequest{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Record; r.AheadID == "" || r.SandboxName != "named" || !r.TimedOut || r.DurationMs > 10000 {
		t.Errorf("a named one-shot with a timeout: %+v", r)
	}
	// A bad name is refused as it is without one made ahead, and the
	// sandbox stays ready.
	if _, err := e.RunOnce(ctx, SandboxConfig{Name: ptr("   ")}, RunRequest{Argv: []string{"true"}}); err == nil {
		t.Error("a bad name was taken")
	}
	waitReady(t, e, 1)
	left, err := e.Leftovers(ctx, false)
	if err != nil || len(left) > 0 {
		t.Errorf("the sandbox made ahead counts as left: %+v %v", left, err)
	}
}

// A start removes what an engine that died left of a sandbox made ahead:
// its workspace and its entry.
func TestAStartRemovesSandboxesMadeAheadThatAreLeft(t *testing.T) {
	root := testDir(t)
	opts := Options{DataDir: filepath.Join(root, "data"), Backends: []backends.Backend{direct.New()}, EUID: os.Geteuid()}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	id := randomHex(6)
	ws := filepath.Join(e.workspacesDir(), id)
	if err := e.store.PutAhead(id, aheadEntry{RunID: e.newRunID()}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("the workspace of a sandbox made ahead by the engine before is left: %v", err)
	}
	if left := e.aheadSandboxes(); len(left) > 0 {
		t.Errorf("still recorded: %v", left)
	}
}

// More one-shots at once than there are sandboxes ready: each runs, in
// one made ahead or as usual, and what is left afterwards is the stock.
func TestManyOneShotsAtOnceWithASmallStock(t *testing.T) {
	e := aheadEngine(t, 2)
	ctx := context.Background()
	const n = 8
	type result struct {
		res *RunResult
		err error
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func() {
			res, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Argv: []string{"sh", "-c", "echo $$ > f; cat f >/dev/null; sleep 0.2"}})
			results <- result{res, err}
		}()
	}
	ahead := 0
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil || r.res.Record.ExitCode == nil || *r.res.Record.ExitCode != 0 {
			t.Fatalf("run: %+v %v", r.res, r.err)
		}
		if r.res.Record.AheadID != "" {
			ahead++
		}
	}
	if ahead == 0 || ahead == n {
		t.Errorf("%d of %d runs took a sandbox made ahead, with 2 ready", ahead, n)
	}
	waitReady(t, e, 2)
	e.ahead.mu.Lock()
	ready := map[string]bool{}
	for _, ro := range e.ahead.ready {
		ready[ro.sb.ID] = true
	}
	e.ahead.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, _ := os.ReadDir(e.workspacesDir())
		var left []string
		for _, ent := range entries {
			if !ready[ent.Name()] {
				left = append(left, ent.Name())
			}
		}
		if len(left) == 0 && len(entries) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workspaces left: %v (ready: %v)", left, ready)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The store has the ready ones, and those reserved to be made next
	// (no more than the stock).
	e.ahead.mu.Lock()
	reserved := len(e.ahead.reserved)
	e.ahead.mu.Unlock()
	deadline = time.Now().Add(5 * time.Second)
	for got := e.aheadSandboxes(); len(got) != 2+reserved || reserved > 2; got = e.aheadSandboxes() {
		if time.Now().After(deadline) {
			t.Fatalf("the store has %d sandboxes made ahead, want the 2 ready and %d reserved", len(got), reserved)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitQueued waits until n runs wait in e's queue for a place.
func waitQueued(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		e.slots.mu.Lock()
		got := len(e.slots.queue)
		e.slots.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs wait in the queue, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A one-shot that took a sandbox made ahead and then waits for a place
// gets the switches as they are when it starts, as run() gives them (it
// builds the spec once admitted): Run Python switched off while it waits
// masks the interpreter in its sandbox too.
func TestASandboxMadeAheadWaitingForAPlaceFollowsTheSwitches(t *testing.T) {
	e := aheadEngine(t, 1)
	s := e.Settings()
	s.Concurrency = 1
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e, 1)
	got, free := queuedBehind(t, e, RunRequest{Argv: []string{"sh", "-c", "exec /usr/bin/python3 -c 'print(1)'"}})
	pol := e.Policy()
	pol.RunPython = false
	if _, err := e.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	free()
	r := <-got
	if r == nil {
		t.FailNow()
	}
	if rec := r.Record; rec.ExitCode == nil || *rec.ExitCode == 0 || strings.Contains(r.Stdout, "1") {
		t.Errorf("the interpreter ran with Run Python off (made ahead: %q): %+v %q %q", rec.AheadID, rec, r.Stdout, r.Stderr)
	}
}

// queuedBehind starts req as a one-shot that waits in e's queue (its
// concurrency 1) behind a run that holds the place; it returns where its
// result comes, and lets the place go with free (or at the test's end).
func queuedBehind(t *testing.T, e *Engine, req RunRequest) (result <-chan *RunResult, free func()) {
	t.Helper()
	blocker, stop := context.WithCancel(context.Background())
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		// Not one to take a sandbox made ahead (its env): it holds the place.
		_, _ = e.RunOnce(blocker, SandboxConfig{}, RunRequest{Argv: []string{"sleep", "60"}, Env: map[string]string{"A": "1"}})
	}()
	free = func() { stop(); <-blocked }
	t.Cleanup(free)
	waitLive(t, e, 1)
	got := make(chan *RunResult, 1)
	go func() {
		res, err := e.RunOnce(context.Background(), SandboxConfig{}, req)
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	waitQueued(t, e, 1)
	return got, free
}

// waitLive waits until n runs are going in e.
func waitLive(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(e.live.all()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs going, want %d", len(e.live.all()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A sandbox made ahead that died while it waited (killed from outside,
// by the OOM killer or a person) is not what a run gets: the run starts
// as it would without one, and its record says it ran.
func TestASandboxMadeAheadThatDiedIsNotTaken(t *testing.T) {
	e := aheadEngine(t, 1)
	e.ahead.mu.Lock()
	ro := e.ahead.ready[0]
	e.ahead.mu.Unlock()
	pid := ro.proc.Pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(ro.proc.Pids()) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox made ahead is still there: %v", ro.proc.Pids())
		}
	}
	res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Argv: []string{"echo", "ran"}})
	if err != nil {
		t.Fatalf("the run was refused: %v (%+v)", err, res)
	}
	if rec := res.Record; rec.ExitCode == nil || *rec.ExitCode != 0 || res.Stdout != "ran\n" || rec.AheadID == ro.id {
		t.Errorf("%+v %q %q", rec, res.Stdout, res.Stderr)
	}
}

// A run that took a sandbox made ahead and that new settings let in (a
// raised concurrency) gets those settings, as run() gives them: a path
// taken off the allowlist by the same change is not readable in it.
func TestASandboxMadeAheadLetInByNewSettingsGetsThem(t *testing.T) {
	e := aheadEngine(t, 1)
	// Not under /tmp, which is the one-shot's own.
	shared, err := os.MkdirTemp("/var/tmp", "senclaw-allowlist-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(shared, "secret")
	if err := os.WriteFile(secret, []byte("hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := e.Settings()
	s.DefaultFsMode, s.Allowlist, s.Concurrency = backends.FsAllowlist, []string{shared}, 1
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e, 1)
	ctx := context.Background()
	// Allowlisted, the file is read, in a sandbox made ahead too.
	if res, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Argv: []string{"cat", secret}}); err != nil || res.Stdout != "hunter2\n" || res.Record.AheadID == "" {
		t.Fatalf("the allowlisted file: %v %+v %q", err, res.Record, res.Stderr)
	}
	waitReady(t, e, 1)
	got, _ := queuedBehind(t, e, RunRequest{Argv: []string{"cat", secret}})
	s.Allowlist, s.Concurrency = nil, 2
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r == nil {
		t.FailNow()
	}
	if rec := r.Record; rec.ExitCode == nil || *rec.ExitCode == 0 || strings.Contains(r.Stdout, "hunter2") {
		t.Errorf("a path taken off the allowlist was read (made ahead: %q): %+v %q %q", rec.AheadID, rec, r.Stdout, r.Stderr)
	}
}

// A command no program can be started with is bad input, named by its
// field, before anything happens: no run is recorded and the sandbox
// made ahead stays ready for the next run.
func TestACommandNoProgramCanStartIsBadInput(t *testing.T) {
	e := aheadEngine(t, 1)
	e.ahead.mu.Lock()
	ready := e.ahead.ready[0].id
	e.ahead.mu.Unlock()
	ctx := context.Background()
	for _, c := range []struct {
		field string
		req   RunRequest
	}{
		{"argv[1]", RunRequest{Argv: []string{"echo", "a\x00b"}}},
		{"argv[0]", RunRequest{Argv: []string{"", "x"}}},
		{"command", RunRequest{Command: "echo a\x00b"}},
	} {
		res, err := e.RunOnce(ctx, SandboxConfig{}, c.req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v (%+v)", c.field, err, res)
		}
	}
	page, err := e.RunsPage("", ListQuery{})
	if err != nil || len(page.Runs) > 0 {
		t.Errorf("bad input left runs: %+v %v", page.Runs, err)
	}
	e.ahead.mu.Lock()
	still := len(e.ahead.ready) == 1 && e.ahead.ready[0].id == ready
	e.ahead.mu.Unlock()
	if !still {
		t.Error("bad input used up the sandbox made ahead")
	}
}

// The Unix socket guard holds in a sandbox made ahead as in any other,
// long after the setup it was handed over in (whose context ended): a
// socket the allowlist shows is refused, one the settings name is
// reached.
func TestTheUnixSocketGuardHoldsInASandboxMadeAhead(t *testing.T) {
	e := aheadEngine(t, 1)
	if ok, why := unixguard.Available(); !ok {
		t.Skipf("this kernel cannot run the guard: %s", why)
	}
	dir, outside, named, accepted := twoUnixServers(t)
	s := e.Settings()
	s.DefaultFsMode, s.Allowlist, s.AllowedSockets = backends.FsAllowlist, []string{dir}, []string{named}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e, 1)
	time.Sleep(100 * time.Millisecond) // the sandbox waits a while
	res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Argv: []string{"python3", "-c", connectAll, outside, named}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.AheadID == "" || !res.Record.OK() {
		t.Fatalf("run %+v\n%s", res.Record, res.Stderr)
	}
	wantLines(t, strings.TrimSpace(res.Stdout), outside+" 13", named+" ok hello")
	if n := accepted.Load(); n != 0 {
		t.Errorf("the socket outside the sandbox accepted %d connections", n)
	}
}
