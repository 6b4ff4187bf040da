package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/internal/testutil"
)

func TestTimeoutKillsTheTreeAndKeepsTheOutput(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	start := time.Now()
	res, err := e.RunOnce(context.Background(), SandboxConfig{Backend: ptr("direct"), TimeoutMs: ptr(1000)},
		RunRequest{Command: "echo before; (sleep 60; echo child) & sleep 60; echo after"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the run took %v: the timeout did not kill it", d)
	}
	r := res.Record
	if !r.TimedOut || r.ExitCode != nil {
		t.Fatalf("record %+v: want timed out, no exit code", r)
	}
	if !strings.Contains(res.Stdout, "before") || strings.Contains(res.Stdout, "after") {
		t.Fatalf("stdout %q: want the output so far", res.Stdout)
	}
	if !strings.Contains(r.Stdout, "before") {
		t.Fatalf("the record lost the output: %q", r.Stdout)
	}
}

func TestOutputIsCappedAndMarkedTruncated(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	res, err := e.RunOnce(context.Background(), directConfig(),
		RunRequest{Command: "echo first; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo last"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Record.Truncated {
		t.Fatal("not marked truncated")
	}
	if len(res.Stdout) > OutputCap+100 {
		t.Fatalf("kept %d bytes, cap %d", len(res.Stdout), OutputCap)
	}
	if !strings.HasPrefix(res.Stdout, "first\n") || !strings.HasSuffix(res.Stdout, "last\n") || !strings.Contains(res.Stdout, "bytes dropped") {
		t.Fatalf("head/tail not kept: %q ... %q", res.Stdout[:20], res.Stdout[len(res.Stdout)-20:])
	}
	if len(res.Record.Stdout) > recordTail {
		t.Fatalf("record keeps %d bytes", len(res.Record.Stdout))
	}
}

func TestOneShotRunsAreRecordedAndCleanedUp(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	res, err := e.RunOnce(context.Background(), directConfig(), RunRequest{Source: SourceMCP, Command: "echo $HOME; touch here"})
	if err != nil {
		t.Fatal(err)
	}
	ws := strings.TrimSpace(res.Stdout)
	if !strings.HasPrefix(ws, filepath.Join(e.DataDir(), "workspaces")) {
		t.Fatalf("HOME = %q, want the workspace", ws)
	}
	// It goes right after the answer (purgeAfter).
	testutil.WaitFor(t, 10*time.Second, "the one-shot workspace to be removed", func() bool { _, err := os.Stat(ws); return os.IsNotExist(err) })
	if all, _ := e.List(); len(all) != 0 {
		t.Fatalf("a one-shot sandbox was kept: %+v", all)
	}
	got, err := e.Run(res.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != "oneshot" || got.Source != SourceMCP || got.Isolation != isolationDegraded || !got.OK() {
		t.Fatalf("record %+v", got)
	}
}

func TestTheEnvironmentIsBuiltFromNothing(t *testing.T) {
	t.Setenv("SENCLAW_TEST_SECRET", "hunter2")
	e := directEngine(t)
	// The test dumps the environment to see it: on the direct backend
	// (host exec) the shell guard's envDump would refuse that.
	s := e.Settings()
	s.Guard.EnvDump = false
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("direct"), Env: map[string]string{"FROM_SANDBOX": "1", "BOTH": "sandbox"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(context.Background(), sb.ID, RunRequest{Argv: []string{"env"}, Env: map[string]string{"BOTH": "run"}})
	if err != nil {
		t.Fatal(err)
	}
	env := res.Stdout
	// A persistent sandbox's package managers keep their caches at the
	// usual places in its workspace (app/pkgcache).
	for _, want := range []string{"SENCLAW_SANDBOX=1", "HOME=" + sb.Workspace, "TMPDIR=" + sb.Workspace + "/.tmp", "FROM_SANDBOX=1", "BOTH=run", "LANG=C.UTF-8",
		"PIP_CACHE_DIR=" + sb.Workspace + "/.cache/pip", "npm_config_cache=" + sb.Workspace + "/.npm", "GOCACHE=" + sb.Workspace + "/.cache/go-build",
		"GOMODCACHE=" + sb.Workspace + "/go/pkg/mod", "CARGO_HOME=" + sb.Workspace + "/.cargo"} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	if strings.Contains(env, "hunter2") {
		t.Fatalf("the engine's environment leaked:\n%s", env)
	}
	if n := len(strings.Split(strings.TrimSpace(env), "\n")); n != 14 {
		t.Fatalf("%d variables, want exactly 14:\n%s", n, env)
	}
}

func TestBackgroundRunsKeepGoingAndStopEndsThem(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	sb, err := e.Create(context.Background(), directConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "echo serving; exec sleep 600", Background: true})
	cancel() // the request is over; the run must go on
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.State != "running" || res.Record.LogFile == "" {
		t.Fatalf("record %+v", res.Record)
	}
	testutil.WaitFor(t, 10*time.Second, "\"serving\" in the run's log", func() bool {
		data, _ := os.ReadFile(res.Record.LogFile)
		return strings.Contains(string(data), "serving")
	})
	if got, _ := e.Get(sb.ID); got.State != StateRunning {
		t.Fatalf("state %q, want running", got.State)
	}
	if n, err := e.Stop(context.Background(), sb.ID); err != nil || n != 1 {
		t.Fatalf("stop = %d, %v", n, err)
	}
	testutil.WaitFor(t, 10*time.Second, "the run to be done", func() bool {
		r, _ := e.Run(res.Record.ID)
		return r != nil && r.State == "done"
	})
	r, _ := e.Run(res.Record.ID)
	if r.Killed != "stopped" {
		t.Fatalf("record after stop: %+v", r)
	}
	if got, _ := e.Get(sb.ID); got.State != StateIdle {
		t.Fatalf("state %q after stop", got.State)
	}
}

func TestRunPythonOffIsRefusedOnEveryPath(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	pol := e.Policy()
	pol.RunPython = false
	if _, err := e.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), directConfig())
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(sb.Workspace, "ran")
	code := "open(" + quote(marker) + ", 'w').write('x')"
	attempts := map[string]func() (*RunResult, error){
		"code_run": func() (*RunResult, error) {
			return e.Exec(context.Background(), sb.ID, RunRequest{Language: "python", Code: code})
		},
		"code_alias": func() (*RunResult, error) {
			return e.Exec(context.Background(), sb.ID, RunRequest{Language: "py", Code: code})
		},
		"one_shot": func() (*RunResult, error) {
			return e.RunOnce(context.Background(), directConfig(), RunRequest{Language: "python3", Code: code})
		},
		"command": func() (*RunResult, error) {
			return e.Exec(context.Background(), sb.ID, RunRequest{Command: "python3 -c " + quote(code)})
		},
		"command_env": func() (*RunResult, error) {
			return e.Exec(context.Background(), sb.ID, RunRequest{Command: "FOO=1 /usr/bin/python3 -c " + quote(code)})
		},
		"argv": func() (*RunResult, error) {
			return e.Exec(context.Background(), sb.ID, RunRequest{Argv: []string{"/usr/bin/python3", "-c", code}})
		},
	}
	for name, run := range attempts {
		res, err := run()
		if !IsRefused(err) || !strings.Contains(err.Error(), "Run Python") {
			t.Errorf("%s: err = %v, want a refusal naming the switch", name, err)
			continue
		}
		if res == nil || !strings.HasPrefix(res.Record.Isolation, "refused: ") {
			t.Errorf("%s: the refusal was not recorded: %+v", name, res)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("python ran although the switch is off")
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// brokenBackend claims to be a healthy isolating backend but cannot start
// anything, like a sandbox tool that broke after its probe.
type brokenBackend struct{}

func (brokenBackend) Name() string { return "broken" }
func (brokenBackend) Probe(context.Context) backends.Capability {
	return backends.Capability{State: backends.Healthy, Isolates: true}
}
func (brokenBackend) Start(context.Context, *backends.Spec) (backends.Process, error) {
	return nil, os.ErrPermission
}

// absentBackend is an isolating backend that is not installed.
type absentBackend struct{}

func (absentBackend) Name() string { return "absent" }
func (absentBackend) Probe(context.Context) backends.Capability {
	return backends.Capability{State: backends.NeverSeen, Isolates: true, Reason: "not installed"}
}
func (absentBackend) Start(context.Context, *backends.Spec) (backends.Process, error) {
	panic("started a backend that is not usable")
}

func TestFailClosed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		backends []backends.Backend
		agent    bool
		cfg      SandboxConfig
		want     string
	}{
		{"no_isolating_backend", []backends.Backend{absentBackend{}, direct.New()}, false, SandboxConfig{}, "no isolation is available"},
		{"backend_fails_to_start", []backends.Backend{brokenBackend{}, direct.New()}, false, SandboxConfig{}, "could not start"},
		{"named_backend_unusable", []backends.Backend{absentBackend{}, direct.New()}, false, SandboxConfig{Backend: ptr("absent")}, "absent is not usable: not installed"},
		{"direct_without_allow", []backends.Backend{direct.New()}, false, SandboxConfig{Backend: ptr("direct")}, "allowDirect is off"},
		{"agent_shell_on_no_isolation", []backends.Backend{absentBackend{}, direct.New()}, true, SandboxConfig{}, "no isolation is available"},
		{"agent_shell_on_broken", []backends.Backend{brokenBackend{}, direct.New()}, true, SandboxConfig{}, "could not start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newTestEngine(t, tc.backends)
			dir := testDir(t)
			marker := filepath.Join(dir, "ran")
			var res *RunResult
			var err error
			if tc.agent {
				// A project the sandbox may write as it is: the backend's
				// own failure is what is tried, not the idmapped mount a
				// root engine would need for a folder of root's.
				os.Chmod(dir, 0o777)
				agentShellOn(t, e)
				res, err = e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: dir, Command: "touch ran"})
			} else {
				res, err = e.RunOnce(context.Background(), tc.cfg, RunRequest{Command: "touch " + marker})
			}
			if !IsRefused(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a refusal containing %q", err, tc.want)
			}
			if res == nil || !strings.HasPrefix(res.Record.Isolation, "refused: ") {
				t.Fatalf("record %+v", res)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
			page, _ := e.RunsPage("", ListQuery{Limit: 10})
			if runs := page.Runs; len(runs) != 1 || !strings.HasPrefix(runs[0].Isolation, "refused: ") {
				t.Fatalf("runs %+v", runs)
			}
		})
	}
}

func TestOffSwitchesRunDirectlyAndSaySo(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, []backends.Backend{absentBackend{}, direct.New()})
	dir := testDir(t)
	res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: dir, Command: "pwd; touch made-here"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Isolation != isolationNone || res.Record.Source != SourceAgentShell || strings.TrimSpace(res.Stdout) != dir {
		t.Fatalf("agent shell off: %+v %q", res.Record, res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "made-here")); err != nil {
		t.Fatal(err)
	}
	res, err = e.SchedulerScript(context.Background(), ScheduledRun{ScheduleID: "s1", Name: "nightly", Code: "echo scheduled"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Isolation != isolationNone || res.Record.Source != SourceScheduler || res.Record.ScheduleID != "s1" || res.Stdout != "scheduled\n" {
		t.Fatalf("scheduler off: %+v %q", res.Record, res.Stdout)
	}
}

func TestPurgeOnlyRemovesOurOwnWorkspace(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	project := testDir(t)
	if err := os.WriteFile(filepath.Join(project, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An agent sandbox works in a project dir: purging it must not touch it.
	if _, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: "true"}); err != nil {
		t.Fatal(err)
	}
	all, _ := e.List()
	if len(all) != 1 || all[0].Kind != "agent" {
		t.Fatalf("agent sandbox: %+v", all)
	}
	if purged, err := e.Delete(context.Background(), all[0].ID, true); err != nil || purged {
		t.Fatalf("purge of an agent sandbox: %v %v", purged, err)
	}
	if _, err := os.Stat(filepath.Join(project, "keep")); err != nil {
		t.Fatal("the project dir was touched")
	}
	// A forged record pointing elsewhere is not purged either.
	sb, err := e.Create(context.Background(), directConfig())
	if err != nil {
		t.Fatal(err)
	}
	forged := *sb
	forged.Workspace = project
	if err := e.store.PutSandbox(sb.ID, forged); err != nil {
		t.Fatal(err)
	}
	if purged, _ := e.Delete(context.Background(), sb.ID, true); purged {
		t.Fatal("a forged workspace was purged")
	}
	if _, err := os.Stat(filepath.Join(project, "keep")); err != nil {
		t.Fatal("the forged path was removed")
	}
	// Our own workspace is.
	sb, _ = e.Create(context.Background(), directConfig())
	if purged, err := e.Delete(context.Background(), sb.ID, true); err != nil || !purged {
		t.Fatalf("purge: %v %v", purged, err)
	}
	if _, err := os.Stat(sb.Workspace); !os.IsNotExist(err) {
		t.Fatal("the workspace is still there")
	}
}

func TestDiskQuotaWatchdogStopsTheRun(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	res, err := e.RunOnce(context.Background(), SandboxConfig{Backend: ptr("direct"), DiskMB: ptr(16), TimeoutMs: ptr(20000)},
		RunRequest{Command: "i=0; while true; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); sleep 0.05; done"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Record.Killed, "disk quota") {
		t.Fatalf("record %+v", res.Record)
	}
}

func TestRunsAreBoundedAndListedNewestFirst(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, []backends.Backend{direct.New()}, func(o *Options) { o.MaxRuns = 3 })
	s := e.Settings()
	s.AllowDirect = true
	e.SetSettings(s)
	for i := 0; i < 5; i++ {
		if _, err := e.RunOnce(context.Background(), directConfig(), RunRequest{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	page, _ := e.RunsPage("", ListQuery{})
	runs := page.Runs
	if len(runs) != 3 || page.Total != 3 {
		t.Fatalf("%d runs kept, want 3", len(runs))
	}
	if !runs[0].StartedAt.After(runs[2].StartedAt) && !runs[0].StartedAt.Equal(runs[2].StartedAt) {
		t.Fatal("not newest first")
	}
}

func TestBackgroundRunsLogBothStreams(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	sb, err := e.Create(context.Background(), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "echo to-stdout; echo to-stderr >&2", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the run to be done", func() bool {
		r, _ := e.Run(res.Record.ID)
		return r != nil && r.State == "done"
	})
	data, _ := os.ReadFile(res.Record.LogFile)
	if !strings.Contains(string(data), "to-stdout") || !strings.Contains(string(data), "to-stderr") {
		t.Fatalf("log %q lacks a stream", data)
	}
}

// A schedule that wants the network gets it only when the policy's
// Scheduler network allows it too; when the policy does not, the firing is
// refused and recorded, and nothing runs.
func TestScheduledNetworkNeedsThePolicyToo(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	pol := e.Policy()
	pol.SchedulerScript, pol.SchedulerNetwork = true, false
	if _, err := e.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(testDir(t), "ran")
	res, err := e.SchedulerScript(context.Background(), ScheduledRun{ScheduleID: "s2", Name: "fetch", Code: "touch " + marker, Network: true})
	if !IsRefused(err) || !strings.Contains(err.Error(), "schedulerNetwork") {
		t.Fatalf("err = %v, want a refusal naming schedulerNetwork", err)
	}
	if res == nil || !strings.HasPrefix(res.Record.Isolation, "refused: ") || res.Record.ScheduleID != "s2" {
		t.Fatalf("record %+v", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused script ran")
	}
	// Without the wish the policy's network does not matter: no network.
	res, err = e.SchedulerScript(context.Background(), ScheduledRun{ScheduleID: "s2", Name: "fetch", Code: "echo hi"})
	if err != nil || res.Record.Isolation != "bwrap" || res.Record.Network {
		t.Fatalf("no network wanted: %+v %v", res, err)
	}
	for _, bad := range []ScheduledRun{
		{Code: "x", Language: "cobol"},
		{Code: " "},
		{Code: "x", TimeoutMs: 600001},
		{Code: "x", Env: map[string]string{"1X": "y"}},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v passed the check", bad)
		}
	}
}

// TestNothingARunStartedSurvivesIt: what a run starts dies when it ends
// or times out, also what left its process group and session the way
// daemons do (setsid, a double fork), under bwrap (its pid namespace and
// cgroup) and on the direct backend (a cgroup of the run's own as root,
// a child subreaper otherwise); the record says which held. The Docker
// cases are in oneshot_docker_test.go and backends/docker.
func TestNothingARunStartedSurvivesIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		backend string
		timeout bool
	}{
		{"bwrap/exit", "bwrap", false},
		{"bwrap/timeout", "bwrap", true},
		{"direct/exit", "direct", false},
		{"direct/timeout", "direct", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var e *Engine
			if tc.backend == "bwrap" {
				e = bwrapEngine(t)
			} else {
				e = directEngine(t)
			}
			mark := "survivor-" + randomHex(4)
			cmd := survivor(mark)
			cfg := SandboxConfig{Backend: ptr(tc.backend)}
			if tc.timeout {
				cmd += "; sleep 60"
				cfg.TimeoutMs = ptr(2000)
			}
			type ran struct {
				res *RunResult
				err error
			}
			done := make(chan ran, 1)
			go func() {
				res, err := e.RunOnce(context.Background(), cfg, RunRequest{Command: cmd})
				done <- ran{res, err}
			}()
			var res *RunResult
			var err error
			select {
			case r := <-done:
				res, err = r.res, r.err
			case <-time.After(30 * time.Second):
				t.Fatalf("the run did not end: what it left behind holds it open: %v", testutil.PidsWith(mark))
			}
			if err != nil || res.Record.TimedOut != tc.timeout || !strings.Contains(res.Stdout, "started") {
				t.Fatalf("run: %v %+v", err, res.Record)
			}
			waitNoneMarked(t, mark, "the run ended")
			if tc.backend == "direct" && !strings.Contains(strings.Join(res.Record.Enforced, "; "), "processes: ") {
				t.Errorf("the record does not say how the run's processes were ended: %+v", res.Record.Enforced)
			}
		})
	}
}
