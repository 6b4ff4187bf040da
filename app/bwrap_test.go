package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/internal/testutil"
)

func bwrapEngine(t *testing.T, opts ...engineOpt) *Engine {
	t.Helper()
	testutil.RequireBwrap(t)
	var user *backends.Credential
	if os.Geteuid() == 0 {
		user = &backends.Credential{UID: 65534, GID: 65534}
	}
	// The test binary is the idmap launcher too (TestMain).
	b := bwrap.New(bwrap.Options{SandboxUser: user, Launcher: testutil.Launcher(t), IDMapDir: filepath.Join(testutil.SandboxDir(t, "sc-idmap-"), "idmap")})
	return newTestEngine(t, []backends.Backend{b, directBackend(t)}, opts...)
}

func TestEngineRunsUnderBwrapAndSaysSo(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Command: "id -u; echo out; echo err >&2"})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Record
	if r.Isolation != "bwrap" || r.Backend != "bwrap" || !r.OK() {
		t.Fatalf("record %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if os.Geteuid() == 0 && lines[0] == "0" {
		t.Fatal("sandboxed code ran as root")
	}
	if res.Stderr != "err\n" {
		t.Fatalf("stderr %q", res.Stderr)
	}
	if os.Geteuid() == 0 {
		joined := strings.Join(r.Enforced, "; ")
		for _, want := range []string{"memory", "pids", "cpu", "disk"} {
			if !strings.Contains(joined, want) {
				t.Errorf("enforced %q lacks %s", joined, want)
			}
		}
	}
}

func TestTheEnginesOwnFilesAreInvisibleInEveryMode(t *testing.T) {
	t.Setenv("SENCLAW_TEST_SECRET", "hunter2")
	for _, mode := range []string{"strict", "allowlist", "open"} {
		t.Run(mode, func(t *testing.T) { checkEngineFilesInvisible(t, bwrapEngine(t), mode) })
	}
}

// checkEngineFilesInvisible runs a script that looks for the engine's
// database, token, workspaces and environment in e's sandbox of mode.
func checkEngineFilesInvisible(t *testing.T, e *Engine, mode string) {
	t.Helper()
	for _, d := range []string{e.opts.ConfigDir, e.opts.RuntimeDir} {
		os.WriteFile(filepath.Join(d, "api-token"), []byte("secret-token"), 0o644)
	}
	db := filepath.Join(e.DataDir(), "senclaw.db")
	neighbour, err := e.Create(context.Background(), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"cat " + db + " 2>/dev/null | head -c 100",
		"ls " + e.DataDir() + " " + e.workspacesDir() + " 2>/dev/null",
		"cat " + e.opts.ConfigDir + "/api-token 2>/dev/null",
		"cat " + e.opts.RuntimeDir + "/api-token 2>/dev/null",
		"cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'",
		"cat /proc/" + strconv.Itoa(os.Getpid()) + "/environ 2>/dev/null | tr '\\0' '\\n'",
		"env",
		"echo done",
	}, "; ")
	res, err := e.RunOnce(context.Background(), SandboxConfig{FsMode: ptr(mode)}, RunRequest{Command: script})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Stdout
	for _, leak := range []string{"secret-token", "hunter2", "senclaw.db", neighbour.ID} {
		if strings.Contains(out, leak) {
			t.Fatalf("%s leaked in %s mode:\n%s", leak, mode, out)
		}
	}
	if !strings.HasSuffix(out, "done\n") {
		t.Fatalf("the script did not finish: %q %q", out, res.Stderr)
	}
}

func TestBwrapTimeoutKeepsOutputAndKillsTheTree(t *testing.T) {
	t.Parallel()
	checkTimeoutKeepsOutput(t, bwrapEngine(t))
}

// checkTimeoutKeepsOutput runs past its timeout in e: the output so far
// is kept, and nothing of the run waits for the sleeps it left.
func checkTimeoutKeepsOutput(t *testing.T, e *Engine) {
	t.Helper()
	start := time.Now()
	res, err := e.RunOnce(context.Background(), SandboxConfig{TimeoutMs: ptr(1500)}, RunRequest{Command: "echo started; sleep 100 & sleep 100; echo never"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Record.TimedOut || res.Stdout != "started\n" || time.Since(start) > 10*time.Second {
		t.Fatalf("record %+v stdout %q after %v", res.Record, res.Stdout, time.Since(start))
	}
}

func TestLimitsHoldAndTheEngineLives(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("cgroup limits need a root engine on this cgroup v1 machine")
	}
	e := bwrapEngine(t)
	bomb, err := e.RunOnce(context.Background(), SandboxConfig{Pids: ptr(32), TimeoutMs: ptr(20000)},
		RunRequest{Language: "python", Code: `
import subprocess
kids = []
for i in range(200):
    try:
        kids.append(subprocess.Popen(["sleep", "30"]))
    except OSError:
        break
print(len(kids))
for k in kids:
    k.kill()
`})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(bomb.Stdout))
	if n == 0 || n >= 32 {
		t.Fatalf("processes started: %d (stdout %q, stderr %q), want fewer than 32", n, bomb.Stdout, bomb.Stderr)
	}
	hog, err := e.RunOnce(context.Background(), SandboxConfig{MemoryMB: ptr(64), TimeoutMs: ptr(20000)},
		RunRequest{Language: "python", Code: "x = bytearray(512 * 1024 * 1024)\nprint('allocated')"})
	if err != nil {
		t.Fatal(err)
	}
	if hog.Record.OK() || strings.Contains(hog.Stdout, "allocated") {
		t.Fatalf("a 512 MiB allocation succeeded under a 64 MB limit: %+v", hog.Record)
	}
	if after, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Argv: []string{"true"}}); err != nil || !after.Record.OK() {
		t.Fatalf("the engine does not run after the limits hit: %v %+v", err, after)
	}
}

func TestStatsAndKillSeeOnlyTheSandboxesProcesses(t *testing.T) {
	t.Parallel()
	checkStatsAndKill(t, bwrapEngine(t))
}

// checkStatsAndKill starts a background run in e and checks that Stats
// lists its processes, not the launcher, and Kill and Stop end them.
func checkStatsAndKill(t *testing.T, e *Engine) {
	t.Helper()
	sb, err := e.Create(context.Background(), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "sleep 300 & exec sleep 301", Background: true}); err != nil {
		t.Fatal(err)
	}
	var st *Stats
	// Both sleeps, each under its own name: the forked child is still
	// "/bin/sh -c ..." for a moment before it execs sleep 300.
	testutil.WaitFor(t, 10*time.Second, "both sleeps in the stats", func() bool {
		st, err = e.Stats(context.Background(), sb.ID)
		return err == nil && len(st.Processes) >= 2 && slices.ContainsFunc(st.Processes, func(p ProcessInfo) bool {
			return strings.HasPrefix(p.Command, "sleep 300")
		})
	})
	var victim int
	for _, p := range st.Processes {
		if strings.HasPrefix(p.Command, "sleep 300") {
			victim = p.Pid
		}
		if strings.HasPrefix(p.Command, "bwrap") || strings.Contains(p.Command, "__landlock-helper") {
			t.Errorf("the launcher is listed as a sandbox process: %+v", p)
		}
	}
	if victim == 0 || st.MemoryLimitMB != sb.MemoryMB || !st.Running {
		t.Fatalf("stats %+v", st)
	}
	if _, err := e.Kill(context.Background(), sb.ID, os.Getpid()); err == nil {
		t.Fatal("killing the engine's own pid through a sandbox was allowed")
	}
	if _, err := e.Kill(context.Background(), sb.ID, victim); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the killed process to leave the stats", func() bool {
		st, _ = e.Stats(context.Background(), sb.ID)
		for _, p := range st.Processes {
			if p.Pid == victim {
				return false
			}
		}
		return true
	})
	if n, err := e.Stop(context.Background(), sb.ID); err != nil || n != 1 {
		t.Fatalf("stop: %d %v", n, err)
	}
	testutil.WaitFor(t, 10*time.Second, "the sandbox to be idle", func() bool { s, _ := e.Get(sb.ID); return s.State == StateIdle })
}

func TestAgentShellOnWritesOnlyInTheProject(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	agentShellOn(t, e)
	project := testDir(t)
	other := testDir(t)
	e.giveToAgent(t, project)
	if os.Geteuid() == 0 {
		os.Chmod(other, 0o777)
	}
	res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: "touch inside && touch " + other + "/outside; touch /tmp/private-tmp; cat /etc/hostname >/dev/null; echo $?"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Isolation != "bwrap" || res.Record.Source != SourceAgentShell {
		t.Fatalf("record %+v", res.Record)
	}
	if _, err := os.Stat(filepath.Join(project, "inside")); err != nil {
		t.Fatalf("the project was not writable: %v %q", err, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(other, "outside")); err == nil {
		t.Fatal("the agent shell wrote outside its project")
	}
}

func TestBwrapMissingOrBrokenIsRefused(t *testing.T) {
	t.Parallel()
	broken := filepath.Join(testDir(t), "bwrap")
	os.WriteFile(broken, []byte("#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n"), 0o755)
	for name, bin := range map[string]string{"missing": "/nonexistent/bwrap", "broken": broken} {
		t.Run(name, func(t *testing.T) {
			e := newTestEngine(t, []backends.Backend{bwrap.New(bwrap.Options{Binary: bin}), direct.New()})
			marker := filepath.Join(testDir(t), "ran")
			_, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Command: "touch " + marker})
			if !IsRefused(err) {
				t.Fatalf("err = %v, want a refusal", err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
			caps := e.Capabilities(context.Background(), true)
			if caps.State != Degraded || caps.Backends[0].State == backends.Healthy {
				t.Fatalf("caps %+v", caps)
			}
		})
	}
}

// TestAMissingCommandExits127Once: a command that is not in the sandbox
// exits 127 (126 when it cannot be executed), as a shell's would, with one
// line saying so, with the network off and on.
func TestAMissingCommandExits127Once(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	for _, tc := range []struct {
		name    string
		network bool
		argv    []string
		code    int
		stderr  string
	}{
		{"missing", false, []string{"nosuchcmd", "-x"}, 127, "senclaw: not found in the sandbox: nosuchcmd\n"},
		{"missing_with_network", true, []string{"nosuchcmd"}, 127, "senclaw: not found in the sandbox: nosuchcmd\n"},
		{"not_executable", false, []string{"/etc/passwd"}, 126, "senclaw: not executable in the sandbox: /etc/passwd\n"},
		{"the_command_s_own_output", false, []string{"sh", "-c", "echo 'bwrap: execvp' >&2; exit 3"}, 3, "bwrap: execvp\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.RunOnce(context.Background(), SandboxConfig{Network: ptr(tc.network)}, RunRequest{Argv: tc.argv})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Record
			if r.ExitCode == nil || *r.ExitCode != tc.code || r.Error != "" || res.Stderr != tc.stderr {
				t.Fatalf("exit %v, error %q, stderr %q; want %d and %q", r.ExitCode, r.Error, res.Stderr, tc.code, tc.stderr)
			}
		})
	}
}
