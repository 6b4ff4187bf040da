package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/direct"
)

// waitReadyStart waits until sandbox id has its next run started ahead,
// and returns it.
func waitReadyStart(t *testing.T, e *Engine, id string) *readyStart {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		e.ready.mu.Lock()
		rs := e.ready.starts[id]
		e.ready.mu.Unlock()
		if rs != nil {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s has no ready start after 20 s", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readyEntries lists the store's entries of ready starts (sandbox ids).
func readyEntries(e *Engine) []string {
	var out []string
	_ = e.store.EachAhead(func(_ string, data []byte) error {
		if strings.Contains(string(data), `"sandbox":`) {
			out = append(out, string(data))
		}
		return nil
	})
	return out
}

// gone reports whether process pid is no longer there.
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// waitNoReadyStart waits until the ready start rs of a sandbox is gone
// whole: its process, and its entry in the store.
func waitNoReadyStart(t *testing.T, e *Engine, rs *readyStart, after string) {
	t.Helper()
	pid := rs.proc.Pid()
	for i := 0; i < 200 && !(gone(pid) && len(readyEntries(e)) == 0); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !gone(pid) {
		t.Errorf("after %s, the ready start's bwrap (pid %d) is still there", after, pid)
	}
	if left := readyEntries(e); len(left) > 0 {
		t.Errorf("after %s, the store still has ready starts: %v", after, left)
	}
}

// A run in a persistent sandbox that ran before takes its ready start and
// gets what a run started as usual gets: the workspace's files, the
// sandbox's environment, its uid, its limits and isolation in the record.
func TestAPersistentSandboxRunTakesItsReadyStart(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{Env: map[string]string{"GREETING": "hello"}, Pids: ptr(40), MemoryMB: ptr(300)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sb.Workspace, "note.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := e.Exec(ctx, sb.ID, RunRequest{Argv: []string{"true"}})
	if err != nil || !first.Record.OK() || first.Record.AheadID != "" {
		t.Fatalf("the first run: %+v %v", first, err)
	}
	const cmd = `cat note.txt; echo "$GREETING"; pwd; id -u; echo out >&2; exit 4`
	rs := waitReadyStart(t, e, sb.ID)
	// What waits is in the sandbox's cgroups, whose limits hold for all
	// its runs together: the ready start is counted in them.
	if os.Geteuid() == 0 {
		inside := rs.proc.Pids()
		if len(inside) == 0 {
			t.Fatal("the ready start has no process")
		}
		for _, pid := range inside {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if (strings.Contains(line, "pids") || strings.Contains(line, "memory")) && !strings.Contains(line, "/sb-"+sb.ID+"/") {
					t.Errorf("process %d of the ready start is outside the sandbox's cgroup: %s", pid, line)
				}
			}
		}
	}
	ready, err := e.Exec(ctx, sb.ID, RunRequest{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	if ready.Record.AheadID == "" {
		t.Fatalf("the run did not take the sandbox's ready start: %+v", ready.Record)
	}
	// The same run started as usual.
	e.readyChanged(sb.ID)
	usual, err := e.Exec(ctx, sb.ID, RunRequest{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	if usual.Record.AheadID != "" {
		t.Fatalf("the run with no ready start took one: %+v", usual.Record)
	}
	r, u := ready.Record, usual.Record
	if ready.Stdout != usual.Stdout || ready.Stderr != usual.Stderr || !strings.HasPrefix(ready.Stdout, "kept\nhello\n"+sb.Workspace+"\n") {
		t.Errorf("ready: %q %q; as usual: %q %q", ready.Stdout, ready.Stderr, usual.Stdout, usual.Stderr)
	}
	if r.ExitCode == nil || *r.ExitCode != 4 || r.Isolation != u.Isolation || r.Kind != "exec" || r.SandboxID != sb.ID ||
		strings.Join(r.Enforced, "|") != strings.Join(u.Enforced, "|") || strings.Join(r.Missing, "|") != strings.Join(u.Missing, "|") {
		t.Errorf("ready:\n%+v\nas usual:\n%+v", r, u)
	}
	if stored, err := e.Run(r.ID); err != nil || stored.State != "done" || stored.AheadID != r.AheadID {
		t.Errorf("stored record: %+v %v", stored, err)
	}
	// One start is ready again, and the store knows of it alone.
	waitReadyStart(t, e, sb.ID)
	if got := readyEntries(e); len(got) != 1 {
		t.Errorf("the store has %d ready starts, want 1: %v", len(got), got)
	}
}

// A change of the sandbox's configuration gives its ready start up at
// once, and the next run gets the change.
func TestAChangeOfTheSandboxGivesItsReadyStartUp(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{Env: map[string]string{"V": "old"}})
	if err != nil {
		t.Fatal(err)
	}
	mount := testDir(t)
	if err := os.WriteFile(filepath.Join(mount, "m.txt"), []byte("mounted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	changes := []struct {
		name  string
		cfg   SandboxConfig
		cmd   string
		check func(res *RunResult) bool
	}{
		{"env", SandboxConfig{Env: map[string]string{"V": "new"}}, `echo "$V"`, func(res *RunResult) bool { return res.Stdout == "new\n" }},
		{"limits", SandboxConfig{Pids: ptr(33)}, "true", func(res *RunResult) bool {
			return strings.Contains(strings.Join(res.Record.Enforced, "|"), "pids 33")
		}},
		{"mounts", SandboxConfig{Mounts: []backends.Mount{{Source: mount, Target: "data", ReadOnly: true}}}, "cat data/m.txt", func(res *RunResult) bool {
			return res.Stdout == "mounted\n"
		}},
		{"fs_mode", SandboxConfig{FsMode: ptr("open")}, "test -d /home && echo open", func(res *RunResult) bool { return res.Stdout == "open\n" }},
	}
	if _, err := e.Exec(ctx, sb.ID, RunRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		rs := waitReadyStart(t, e, sb.ID)
		if _, err := e.Update(sb.ID, c.cfg); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		waitNoReadyStart(t, e, rs, "an update of "+c.name)
		res, err := e.Exec(ctx, sb.ID, RunRequest{Command: c.cmd})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Record.AheadID != "" || !c.check(res) {
			t.Errorf("%s: the run after the change: %+v stdout %q stderr %q", c.name, res.Record, res.Stdout, res.Stderr)
		}
		// The start made after it has the change too.
		waitReadyStart(t, e, sb.ID)
		res, err = e.Exec(ctx, sb.ID, RunRequest{Command: c.cmd})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Record.AheadID == "" || !c.check(res) {
			t.Errorf("%s: the ready run after the change: %+v stdout %q stderr %q", c.name, res.Record, res.Stdout, res.Stderr)
		}
	}
}

// Stop, a kill of all its processes, delete and the idle time each end a
// sandbox's ready start, with nothing of it left.
func TestStopKillDeleteAndIdleEndTheReadyStart(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	ctx := context.Background()
	for _, way := range []string{"stop", "kill", "delete", "idle"} {
		sb, err := e.Create(ctx, SandboxConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Exec(ctx, sb.ID, RunRequest{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
		rs := waitReadyStart(t, e, sb.ID)
		switch way {
		case "stop":
			_, err = e.Stop(ctx, sb.ID)
		case "kill":
			_, err = e.Kill(ctx, sb.ID, 0)
		case "delete":
			_, err = e.Delete(ctx, sb.ID, true)
		case "idle":
			rs.idle.Reset(time.Millisecond) // the setting's minutes, shortened
		}
		if err != nil {
			t.Fatalf("%s: %v", way, err)
		}
		if way != "idle" && !gone(rs.proc.Pid()) {
			t.Errorf("%s returned with the ready start still there", way)
		}
		waitNoReadyStart(t, e, rs, way)
	}
}

// TestSandboxLimitsHoldAcrossRuns: foreground runs at once in one
// sandbox, one of them in its ready start, share the sandbox's process
// limit (the ready start's waiting processes count in it).
func TestSandboxLimitsHoldAcrossRuns(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("cgroup limits need a root engine on this cgroup v1 machine")
	}
	e := bwrapEngine(t)
	ctx := context.Background()
	const pids, runs = 24, 12
	s := e.Settings()
	s.Concurrency = 2 * runs // all at once, not queued
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(ctx, SandboxConfig{Pids: ptr(pids)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(context.Background(), sb.ID) })
	if _, err := e.Exec(ctx, sb.ID, RunRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	waitReadyStart(t, e, sb.ID)
	var wg sync.WaitGroup
	var mu sync.Mutex
	aheadRuns := 0
	all := make(chan struct{})
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// sh and four sleeps each: 12 runs would hold 60 processes and more.
			res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "sleep 4 & sleep 4 & sleep 4 & sleep 4 & wait", TimeoutMs: 20000})
			if err == nil && res.Record.AheadID != "" {
				mu.Lock()
				aheadRuns++
				mu.Unlock()
			}
		}()
	}
	go func() { wg.Wait(); close(all) }()
	most := 0
	for done := false; !done; {
		select {
		case <-all:
			done = true
		case <-time.After(100 * time.Millisecond):
		}
		most = max(most, sandboxPids(t, sb.ID))
	}
	t.Logf("%d runs (%d in the ready start) held at most %d processes together", runs, aheadRuns, most)
	if aheadRuns == 0 {
		t.Error("no run took the sandbox's ready start")
	}
	if most > pids {
		t.Errorf("%d runs of a sandbox with pids %d held %d processes together", runs, pids, most)
	}
	if most < pids*3/4 {
		t.Errorf("the runs held at most %d processes: the test did not reach the limit", most)
	}
}

// The agent shell's commands take the project sandbox's ready start: a
// command's input (attached, no terminal) reaches it, a signal the caller
// passes reaches it, and a command given a folder of the project starts
// there.
func TestAgentShellCommandsTakeTheReadyStart(t *testing.T) {
	t.Parallel()
	e := agentShellEngines(t)["bwrap"]
	ctx := context.Background()
	project := projectDir(t, e)
	sub := filepath.Join(project, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AgentShell(ctx, AgentShellRequest{ProjectDir: project, Command: "true"}); err != nil {
		t.Fatal(err)
	}
	sb, err := e.agentSandbox(project, "", e.Policy())
	if err != nil {
		t.Fatal(err)
	}
	waitReadyStart(t, e, sb.ID)
	res, err := e.AgentShell(ctx, AgentShellRequest{ProjectDir: project, Dir: sub, Command: "pwd; wc -l",
		Attach: &Attachment{Stdin: strings.NewReader("one\ntwo\nthree\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.AheadID == "" || res.Stdout != sub+"\n3\n" || !res.Record.OK() {
		t.Errorf("with input: %+v stdout %q stderr %q", res.Record, res.Stdout, res.Stderr)
	}
	waitReadyStart(t, e, sb.ID)
	control := make(chan Control, 1)
	out := &lockedBuffer{}
	go func() {
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "waiting") && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		control <- Control{Signal: "TERM"}
	}()
	res, err = e.AgentShell(ctx, AgentShellRequest{ProjectDir: project, Stdout: out, Attach: &Attachment{Control: control},
		Command: `trap 'echo got TERM; exit 7' TERM; echo waiting; while :; do sleep 0.05; done`})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Record; r.AheadID == "" || r.ExitCode == nil || *r.ExitCode != 7 || !strings.Contains(res.Stdout, "got TERM") {
		t.Errorf("with a signal: %+v stdout %q", r, res.Stdout)
	}
	// Without input, the command reads an end at once, as it would have.
	waitReadyStart(t, e, sb.ID)
	res, err = e.AgentShell(ctx, AgentShellRequest{ProjectDir: project, Command: "cat; echo done"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.AheadID == "" || res.Stdout != "done\n" {
		t.Errorf("without input: %+v stdout %q", res.Record, res.Stdout)
	}
}

// sandboxPids is how many processes sandbox id's cgroup holds now (all its
// runs', a ready start's included), read from the pids controller.
func sandboxPids(t *testing.T, id string) int {
	t.Helper()
	var files []string
	for _, pattern := range []string{"/sys/fs/cgroup/pids/*/sb-%s/pids.current", "/sys/fs/cgroup/*/sb-%s/pids.current", "/sys/fs/cgroup/unified/*/sb-%s/pids.current"} {
		m, _ := filepath.Glob(fmt.Sprintf(pattern, id))
		files = append(files, m...)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		n = max(n, v)
	}
	return n
}

// A start forgets the ready starts an engine that died left (their
// processes died with it), and keeps their sandboxes and workspaces.
func TestAStartRemovesReadyStartsThatAreLeft(t *testing.T) {
	root := testDir(t)
	opts := Options{DataDir: filepath.Join(root, "data"), Backends: []backends.Backend{direct.New()}, EUID: os.Geteuid()}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sb.Workspace, "kept"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ed := e.newReadyIdent(sb.ID)
	if err := e.store.PutAhead(ed.ID, ed.Value); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if left := readyEntries(e); len(left) > 0 {
		t.Errorf("still recorded: %v", left)
	}
	if _, err := os.Stat(filepath.Join(sb.Workspace, "kept")); err != nil {
		t.Errorf("the sandbox's workspace went with its ready start: %v", err)
	}
	if _, err := e.Get(sb.ID); err != nil {
		t.Errorf("the sandbox went with its ready start: %v", err)
	}
}

// A sandbox with network rules is kept ready too, and its rules hold in
// the run that takes the ready start: a connect port is reached through
// the proxy, a port outside the rules is not.
func TestAReadyStartKeepsTheNetworkRules(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (apt-get install -y curl)")
	}
	f := newNetFixture(t)
	sb := f.create(t, SandboxConfig{Backend: ptr("bwrap"), Connect: []int{f.remote}})
	script := curl(fmt.Sprintf("http://example.test:%d/a", f.remote), false) + "\n" + curl(fmt.Sprintf("http://other.test:%d/b", f.remote2), false)
	cold := f.sh(t, sb.ID, script)
	waitReadyStart(t, f.e, sb.ID)
	res, err := f.e.Exec(context.Background(), sb.ID, RunRequest{Argv: []string{"/bin/sh", "-c", script}, TimeoutMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.AheadID == "" {
		t.Fatalf("the run did not take the ready start: %+v", res.Record)
	}
	wantLines(t, res.Stdout, "remote-ok /a 200 ")
	if strings.Contains(res.Stdout, "remote2-ok") || res.Stdout != cold {
		t.Errorf("ready: %q; as usual: %q", res.Stdout, cold)
	}
}

// A sandbox whose backend starts nothing ahead (Landlock) is not kept
// ready, and its runs leave no entry for one.
func TestALandlockSandboxIsNotKeptReady(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		res, err := e.Exec(ctx, sb.ID, RunRequest{Argv: []string{"true"}})
		if err != nil || !res.Record.OK() || res.Record.AheadID != "" {
			t.Fatalf("run %d: %+v %v", i, res, err)
		}
	}
	e.ready.wg.Wait()
	e.ready.mu.Lock()
	n := len(e.ready.starts)
	e.ready.mu.Unlock()
	if n > 0 || len(readyEntries(e)) > 0 {
		t.Errorf("a landlock sandbox has %d ready starts, entries %v", n, readyEntries(e))
	}
}
