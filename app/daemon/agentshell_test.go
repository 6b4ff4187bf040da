package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/testutil"
)

// testDaemon is a real `senclaw serve` of its own: its dirs, its HOME,
// and (for the failing case) its own PATH.
type testDaemon struct {
	bin, root, home string
	env             []string
	c               *client.Client
	pid             int // the daemon's
}

// startDaemon starts a daemon; extraEnv goes into its environment (and
// that of every senclaw process the test starts, which reach it).
func startDaemon(t *testing.T, extraEnv ...string) *testDaemon {
	t.Helper()
	return startDaemonIn(t, nil, extraEnv...)
}

// startDaemonIn starts the daemon through wrap (a command that ends by
// running its arguments: senclaw serve ...), or directly when wrap is nil.
func startDaemonIn(t *testing.T, wrap []string, extraEnv ...string) *testDaemon {
	t.Helper()
	testutil.RequireBwrap(t)
	bin := testutil.Senclaw(t)
	root := testutil.SandboxDir(t, "sc-as-")
	testutil.StopDaemonAtCleanup(t, filepath.Join(root, "run", "senclaw"))
	d := &testDaemon{bin: bin, root: root, home: filepath.Join(root, "home")}
	os.MkdirAll(d.home, 0o755)
	d.env = append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(root, "run"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_DATA_HOME=", "SENCLAW_DATA_DIR="+filepath.Join(root, "data"), "HOME="+d.home,
		// Docker must not stand in for a bwrap that cannot start.
		"DOCKER_HOST=unix://"+filepath.Join(root, "no-docker.sock"))
	d.env = append(d.env, extraEnv...)
	argv := append(slices.Clone(wrap), bin, "serve", "--listen", "")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = d.env
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = testutil.LogFile(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "socket ") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	d.c = client.DialSocket(apitype.SocketPath(filepath.Join(root, "run", "senclaw")))
	if err := d.c.Ping(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	d.pid = cmd.Process.Pid
	return d
}

func (d *testDaemon) setAgentShell(t *testing.T, on bool) {
	t.Helper()
	p, err := d.c.Policy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.ExecShell = on
	if _, err := d.c.SetPolicy(context.Background(), *p); err != nil {
		t.Fatal(err)
	}
}

// dir makes a directory in the test's root the sandbox user may write.
func (d *testDaemon) dir(t *testing.T, name string) string {
	p := filepath.Join(d.root, name)
	if err := os.MkdirAll(p, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o777)
	return p
}

func (d *testDaemon) lastRun(t *testing.T) app.RunRecord {
	t.Helper()
	var out struct {
		Runs []app.RunRecord `json:"runs"`
	}
	if err := d.c.Do(context.Background(), "GET", "/runs", nil, nil, &out); err != nil || len(out.Runs) == 0 {
		t.Fatalf("runs: %v %v", out.Runs, err)
	}
	return out.Runs[0]
}

// hookCommandLine is what the agent's hook would give Claude Code's shell.
func (d *testDaemon) hook(t *testing.T, agent string, input any) map[string]any {
	t.Helper()
	data, _ := json.Marshal(input)
	cmd := exec.Command(d.bin, "hook", agent)
	cmd.Env = d.env
	cmd.Stdin = strings.NewReader(string(data))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("senclaw hook %s: %v %s", agent, err, stderr.String())
	}
	var answer map[string]any
	if err := json.Unmarshal(out, &answer); err != nil {
		t.Fatalf("the hook's answer %q: %v", out, err)
	}
	return answer
}

// The command an agent might send: quotes of both kinds, a heredoc, &&,
// an escape attempt beside the project and into $HOME, and a trailing
// newline.
func agentCommand(beside, home string) string {
	return `cat > "out file.txt" <<'EOF'
it's "quoted" $HOME ` + "`x`" + `
EOF
test -s "out file.txt" && echo "ok-$((1+1))" && printf '%s\n' 'a  b'
touch ` + beside + `/escaped; touch ` + home + `/escaped; echo done
`
}

const agentFileContent = "it's \"quoted\" $HOME `x`\n"

func TestClaudeCodeHookRoutesTheCommandThroughTheAgentShell(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a real daemon and the hook end to end (about 15 s); make test-go runs it")
	}
	t.Parallel()
	d := startDaemon(t)
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("switch_on_%v", on), func(t *testing.T) {
			d.setAgentShell(t, on)
			project := d.dir(t, fmt.Sprintf("proj-%v", on))
			beside := d.dir(t, fmt.Sprintf("beside-%v", on))
			command := agentCommand(beside, d.home)
			// The documented PreToolUse input of a Bash tool call.
			answer := d.hook(t, "claude-code", map[string]any{
				"session_id": "s1", "transcript_path": "/dev/null", "cwd": project, "permission_mode": "default",
				"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1",
				"tool_input": map[string]any{"command": command, "description": "write a file", "timeout": 120000},
			})
			hso, _ := answer["hookSpecificOutput"].(map[string]any)
			updated, _ := hso["updatedInput"].(map[string]any)
			if hso["hookEventName"] != "PreToolUse" || updated == nil || hso["permissionDecision"] != nil {
				t.Fatalf("answer %v", answer)
			}
			if updated["description"] != "write a file" || updated["timeout"] != float64(120000) {
				t.Errorf("the other fields of the tool input were not kept: %v", updated)
			}
			line, _ := updated["command"].(string)
			sh := exec.Command("/bin/sh", "-c", line)
			sh.Dir, sh.Env = project, d.env
			out, err := sh.CombinedOutput()
			if err != nil && on {
				t.Logf("the command's last step failed, as it should sandboxed: %v", err)
			}
			if !strings.Contains(string(out), "ok-2\na  b\n") || !strings.Contains(string(out), "done") {
				t.Fatalf("output %q", out)
			}
			if got, err := os.ReadFile(filepath.Join(project, "out file.txt")); err != nil || string(got) != agentFileContent {
				t.Fatalf("the project's file: %q %v", got, err)
			}
			_, errBeside := os.Stat(filepath.Join(beside, "escaped"))
			_, errHome := os.Stat(filepath.Join(d.home, "escaped"))
			rec := d.lastRun(t)
			if rec.Source != "agent-shell" || rec.Agent != "claude-code" || rec.Command != command {
				t.Errorf("record %+v", rec)
			}
			if on {
				if errBeside == nil || errHome == nil {
					t.Errorf("the sandboxed command wrote beside the project (%v) or into $HOME (%v)", errBeside == nil, errHome == nil)
				}
				if rec.Isolation != "bwrap" {
					t.Errorf("isolation %q, want bwrap", rec.Isolation)
				}
			} else {
				// Off, an agent's command runs on the host, confined by
				// Landlock to its project (hostconfine.go).
				if errBeside == nil || errHome == nil {
					t.Errorf("off, the agent's host command wrote beside the project (%v) or into $HOME (%v)", errBeside == nil, errHome == nil)
				}
				if rec.Isolation != "landlock (host exec)" {
					t.Errorf("isolation %q, want landlock (host exec)", rec.Isolation)
				}
			}
		})
	}
}

// With the switch on and bwrap unable to start (a bwrap on the daemon's
// PATH that always fails; Landlock and Docker not offered), the hook
// denies with the reason, and the command never runs.
func TestClaudeCodeHookDeniesWhenNothingCanIsolate(t *testing.T) {
	t.Parallel()
	fake := testutil.SandboxDir(t, "sc-fakebwrap-")
	os.WriteFile(filepath.Join(fake, "bwrap"), []byte("#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n"), 0o755)
	d := startDaemon(t, "PATH="+fake+":"+os.Getenv("PATH"), "SENCLAW_BACKENDS=bwrap,direct")
	d.setAgentShell(t, true)
	project := d.dir(t, "proj")
	marker := filepath.Join(project, "ran")
	answer := d.hook(t, "claude-code", map[string]any{
		"session_id": "s1", "cwd": project, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "touch " + marker},
	})
	hso, _ := answer["hookSpecificOutput"].(map[string]any)
	reason, _ := hso["permissionDecisionReason"].(string)
	if hso["permissionDecision"] != "deny" || hso["updatedInput"] != nil || !strings.Contains(reason, "no isolation") {
		t.Fatalf("answer %v", answer)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
	// Nor does the agent shell itself run it unconfined.
	sh := exec.Command(d.bin, "agent-shell", "-c", "touch "+marker)
	sh.Dir, sh.Env = project, d.env
	if err := sh.Run(); err == nil || sh.ProcessState.ExitCode() != 126 {
		t.Fatalf("agent-shell: %v (exit %d), want 126", err, sh.ProcessState.ExitCode())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
}

// The Gemini CLI hook rewrites run_shell_command's command (its
// hookSpecificOutput.tool_input merges with the model's arguments) and
// leaves other tools alone.
func TestGeminiHookRewritesTheShellTool(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	d.setAgentShell(t, true)
	project := d.dir(t, "proj")
	answer := d.hook(t, "gemini-cli", map[string]any{
		"session_id": "s1", "cwd": project, "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z",
		"tool_name": "run_shell_command", "tool_input": map[string]any{"command": "echo 'it''s' && echo two\n", "description": "d"},
	})
	hso, _ := answer["hookSpecificOutput"].(map[string]any)
	in, _ := hso["tool_input"].(map[string]any)
	line, _ := in["command"].(string)
	sh := exec.Command("/bin/sh", "-c", line)
	sh.Dir, sh.Env = project, d.env
	if out, err := sh.CombinedOutput(); err != nil || string(out) != "its\ntwo\n" {
		t.Fatalf("answer %v; running it: %q %v", answer, out, err)
	}
	if rec := d.lastRun(t); rec.Agent != "gemini-cli" || rec.Isolation != "bwrap" {
		t.Errorf("record %+v", rec)
	}
	cmd := exec.Command(d.bin, "hook", "gemini-cli")
	cmd.Env, cmd.Stdin = d.env, strings.NewReader(`{"cwd":"/","tool_name":"read_file","tool_input":{"file_path":"x"}}`)
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("another tool: %q %v", out, err)
	}
}

// senclaw integrate claude-code against a settings file with other
// content: it shows the change, keeps the rest, changes nothing the
// second time, shows in GET /integrations, and --remove restores the file.
func TestIntegrateClaudeCodeCommand(t *testing.T) {
	data := cliEnv(t)
	home := testutil.SandboxDir(t, "sc-home-")
	t.Setenv("HOME", home)
	settings := filepath.Join(home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	orig := "{\n  \"model\": \"opus\",\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(ls:*)\"\n    ]\n  }\n}\n"
	os.WriteFile(settings, []byte(orig), 0o644)
	defer stopServed(t, serveInProcess(t, data))
	code, out, errOut := senclaw(t, "--data-dir", data, "integrate", "claude-code", "--dry-run")
	if got, _ := os.ReadFile(settings); code != 0 || string(got) != orig || !strings.Contains(out, "+ ") || !strings.Contains(out, "hook claude-code") {
		t.Fatalf("--dry-run: %d %q %q; file %q", code, out, errOut, got)
	}
	if code, out, errOut := senclaw(t, "--data-dir", data, "integrate", "claude-code"); code != 0 || !strings.Contains(out, "Installed") {
		t.Fatalf("integrate: %d %q %q", code, out, errOut)
	}
	got, _ := os.ReadFile(settings)
	if !strings.Contains(string(got), `"PreToolUse"`) || !strings.Contains(string(got), `"Bash(ls:*)"`) || !strings.Contains(string(got), `"model": "opus"`) {
		t.Fatalf("settings after integrate:\n%s", got)
	}
	if code, out, _ := senclaw(t, "--data-dir", data, "integrate", "claude-code"); code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("a second integrate: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "--data-dir", data, "policy"); code != 0 || !strings.Contains(out, "claude-code") || !strings.Contains(out, settings) {
		t.Errorf("senclaw policy does not show the integration: %q", out)
	}
	if code, out, errOut := senclaw(t, "--data-dir", data, "integrate", "claude-code", "--remove"); code != 0 || !strings.Contains(out, "Removed") {
		t.Fatalf("--remove: %d %q %q", code, out, errOut)
	}
	if back, _ := os.ReadFile(settings); string(back) != orig {
		t.Fatalf("after --remove:\n%s\nwant:\n%s", back, orig)
	}
}

// senclaw integrate --project writes a project's settings only inside the
// project, following no link there: a sandboxed command that wrote the
// project could have made .claude/settings.local.json, or .claude itself,
// lead to a file of the person's elsewhere (their dotfiles); --remove
// too. A plain project gets its hook.
func TestIntegrateProjectWritesNothingThroughALink(t *testing.T) {
	data := cliEnv(t)
	home := testutil.SandboxDir(t, "sc-home-")
	t.Setenv("HOME", home)
	dotfiles := filepath.Join(home, "dotfiles")
	os.MkdirAll(filepath.Join(dotfiles, "claude"), 0o755)
	outside := map[string]string{
		filepath.Join(dotfiles, "settings.local.json"):           `{"model": "opus"}` + "\n",
		filepath.Join(dotfiles, "claude", "settings.local.json"): `{"model": "sonnet"}` + "\n",
		filepath.Join(dotfiles, "gemini.json"):                   `{}` + "\n",
	}
	for f, content := range outside {
		os.WriteFile(f, []byte(content), 0o644)
	}
	fileLink, dirLink, gemini, plain := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(fileLink, ".claude"), 0o755)
	os.Symlink(filepath.Join(dotfiles, "settings.local.json"), filepath.Join(fileLink, ".claude", "settings.local.json"))
	os.Symlink(filepath.Join(dotfiles, "claude"), filepath.Join(dirLink, ".claude"))
	os.MkdirAll(filepath.Join(gemini, ".gemini"), 0o755)
	os.Symlink(filepath.Join(dotfiles, "gemini.json"), filepath.Join(gemini, ".gemini", "settings.json"))
	// A link that stays inside the project is refused too: none is followed.
	inside := t.TempDir()
	os.MkdirAll(filepath.Join(inside, "config", "claude"), 0o755)
	os.Symlink("config/claude", filepath.Join(inside, ".claude"))
	for _, c := range []struct{ agent, project string }{{"claude-code", fileLink}, {"claude-code", dirLink}, {"gemini-cli", gemini}, {"claude-code", inside}} {
		for _, extra := range [][]string{nil, {"--remove"}} {
			args := append([]string{"--data-dir", data, "integrate", c.agent, "--project", c.project, "--yes"}, extra...)
			code, out, errOut := senclaw(t, args...)
			if code == 0 || !strings.Contains(errOut, "symbolic link") {
				t.Errorf("%v: exit %d, %q %q; want a refusal naming the link", args[2:], code, out, errOut)
			}
		}
	}
	for f, content := range outside {
		if got, _ := os.ReadFile(f); string(got) != content {
			t.Errorf("%s was written through a link: %q", f, got)
		}
	}
	for _, d := range []string{filepath.Join(dotfiles, "claude"), filepath.Join(inside, "config", "claude")} {
		if entries, _ := os.ReadDir(d); len(entries) > 1 || len(entries) == 1 && entries[0].Name() != "settings.local.json" {
			t.Errorf("something was made in %s through a link: %v", d, entries)
		}
	}
	if entries, _ := os.ReadDir(dotfiles); len(entries) != 3 {
		t.Errorf("something was made beside the linked files: %v", entries)
	}
	if code, out, errOut := senclaw(t, "--data-dir", data, "integrate", "claude-code", "--project", plain, "--yes"); code != 0 || !strings.Contains(out, "Installed") {
		t.Fatalf("a plain project: %d %q %q", code, out, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(plain, ".claude", "settings.local.json")); !strings.Contains(string(got), "hook claude-code") {
		t.Errorf("the plain project's settings: %q", got)
	}
	if code, out, errOut := senclaw(t, "--data-dir", data, "integrate", "claude-code", "--project", plain, "--remove", "--yes"); code != 0 || !strings.Contains(out, "Removed") {
		t.Fatalf("--remove in a plain project: %d %q %q", code, out, errOut)
	}
}

// shellStatus is a finished process's status as a shell sees it: the
// exit code, or 128+N for death by signal N.
func shellStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// TestAgentShellBehavesAsShC runs a table of command lines both with
// sh -c and with senclaw agent-shell -c through a real daemon, with the
// switch on (bwrap) and off (the host), and compares stdout, stderr and
// the status; the signal cases send the signal to the process once it
// printed "ready", as kill(1) would.
func TestAgentShellBehavesAsShC(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	cases := []struct {
		name, line, stdin string
		signal            syscall.Signal
	}{
		{"exit_0", "true", "", 0},
		{"exit_3", "echo out; echo err >&2; exit 3", "", 0},
		{"exit_255", "exit 255", "", 0},
		{"not_found", "no-such-command-here", "", 0},
		{"self_killed", "kill -TERM $$", "", 0},
		{"stdin_cat", "cat", "one\ntwo\n", 0},
		{"stdin_read", "read a; read b; echo \"$b-$a\"", "first\nsecond\n", 0},
		{"stdin_empty", "wc -c", "", 0},
		{"args", "echo \"$0|$1|$2\"", "", 0},
		{"quoting", `printf '%s\n' "a b" 'c'"'"'d' $((6*7))`, "", 0},
		{"sigterm_trap", `trap 'echo got TERM; exit 9' TERM; echo ready; while :; do sleep 0.05; done`, "", syscall.SIGTERM},
		{"sigint_dies", `echo ready; exec sleep 30`, "", syscall.SIGINT},
		{"sighup_trap", `trap 'echo got HUP; exit 4' HUP; echo ready; while :; do sleep 0.05; done`, "", syscall.SIGHUP},
		{"sigterm_dies", `echo ready; exec sleep 30`, "", syscall.SIGTERM},
	}
	run := func(t *testing.T, argv []string, dir, stdin string, sig syscall.Signal) (string, string, int) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, d.env, strings.NewReader(stdin)
		var errOut strings.Builder
		cmd.Stderr = &errOut
		outR, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if sig != 0 && sc.Text() == "ready" {
				cmd.Process.Signal(sig)
			}
		}
		cmd.Wait()
		return out.String(), errOut.String(), shellStatus(cmd.ProcessState)
	}
	for _, on := range []bool{true, false} {
		d.setAgentShell(t, on)
		project := d.dir(t, fmt.Sprintf("shc-%v", on))
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/on_%v", tc.name, on), func(t *testing.T) {
				extra := []string{}
				if tc.name == "args" {
					extra = []string{"zero", "one", "two"}
				}
				wantOut, wantErr, wantStatus := run(t, append([]string{"/bin/sh", "-c", tc.line}, extra...), project, tc.stdin, tc.signal)
				gotOut, gotErr, gotStatus := run(t, append([]string{d.bin, "agent-shell", "-c", tc.line}, extra...), project, tc.stdin, tc.signal)
				if tc.name == "not_found" {
					// The shell's message names itself; the status and the stream are what count.
					wantErr, gotErr = fmt.Sprint(strings.Contains(wantErr, "not found")), fmt.Sprint(strings.Contains(gotErr, "not found"))
				}
				if gotOut != wantOut || gotErr != wantErr || gotStatus != wantStatus {
					t.Errorf("sh -c: %q %q %d\nagent-shell -c: %q %q %d", wantOut, wantErr, wantStatus, gotOut, gotErr, gotStatus)
				}
			})
		}
	}
}

// openPTY opens a pseudo-terminal for the test to play the person at it.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: 80, Row: 24})
	return m, s
}

// ptyScreen is a command started on a pseudo-terminal of its own, and
// what it has shown there so far: the test plays the person at it.
type ptyScreen struct {
	master *os.File
	cmd    *exec.Cmd
	mu     sync.Mutex
	screen strings.Builder
}

// startOnPTY starts cmd with a new 80x24 pseudo-terminal as its stdin,
// stdout, stderr and controlling terminal.
func startOnPTY(t *testing.T, cmd *exec.Cmd) *ptyScreen {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	p := &ptyScreen{master: master, cmd: cmd}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.screen.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return p
}

func (p *ptyScreen) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.screen.String()
}

// typ types s.
func (p *ptyScreen) typ(s string) { p.master.Write([]byte(s)) }

// waitFor waits until the terminal shows what.
func (p *ptyScreen) waitFor(t *testing.T, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(p.String(), what); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; it shows:\n%q", what, p.String())
		}
	}
}

// resize gives the terminal a new size, and the CLI the time to pass the
// SIGWINCH it gets on.
func (p *ptyScreen) resize(cols, rows uint16) {
	unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	time.Sleep(300 * time.Millisecond)
}

// wait waits for the command to exit and returns its exit code.
func (p *ptyScreen) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("the command did not exit")
	}
	return p.cmd.ProcessState.ExitCode()
}

// TestAgentShellInATerminal drives senclaw agent-shell (no command: an
// interactive shell) from a pseudo-terminal, as a person would: it types
// a command and reads its answer, sees a terminal inside with this one's
// size, resizes it, interrupts a command with ^C, and exits.
func TestAgentShellInATerminal(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("on_%v", on), func(t *testing.T) {
			d.setAgentShell(t, on)
			cmd := exec.Command(d.bin, "agent-shell")
			cmd.Dir, cmd.Env = d.dir(t, fmt.Sprintf("tty-%v", on)), append(d.env, "TERM=dumb", "PS1=$ ")
			tty := startOnPTY(t, cmd)
			tty.typ("test -t 0 && test -t 1 && echo TTY-$((40+2))\n")
			tty.waitFor(t, "TTY-42")
			tty.typ("stty size\n")
			tty.waitFor(t, "24 80")
			tty.resize(120, 40)
			tty.typ("stty size\n")
			tty.waitFor(t, "40 120")
			tty.typ("sleep 30; echo not-interrupted\n")
			time.Sleep(500 * time.Millisecond)
			tty.typ("\x03") // ^C: the terminal inside interrupts the sleep
			tty.typ("echo after-$((1+1))\n")
			tty.waitFor(t, "after-2")
			tty.typ("exit 5\n")
			if code := tty.wait(t); code != 5 {
				t.Errorf("exit code %d, want 5", code)
			}
			if strings.Contains(tty.String(), "\nnot-interrupted") {
				t.Errorf("^C did not interrupt the command:\n%s", tty.String())
			}
			rec := d.lastRun(t)
			if !rec.Terminal || (on && rec.Isolation != "bwrap") || (!on && rec.Isolation != "landlock (host exec)") {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

// TestIntegrateRemoveRestoresTheFileByteForByte: senclaw integrate
// rewrites the whole settings file; --remove puts it back as it was,
// byte for byte, when nothing else changed it since (a one-line file, a
// Gemini file without enableHooks), removes the file (and the folder)
// it created, and where the file was edited since takes out only its
// hook, keeping the edit. Before, --remove left the file laid out anew,
// and an empty {} where there had been no file.
func TestIntegrateRemoveRestoresTheFileByteForByte(t *testing.T) {
	data := cliEnv(t)
	home := testutil.SandboxDir(t, "sc-home-")
	t.Setenv("HOME", home)
	integrate := func(args ...string) {
		t.Helper()
		if code, out, errOut := senclaw(t, append([]string{"--data-dir", data, "integrate"}, args...)...); code != 0 {
			t.Fatalf("integrate %v: %d %q %q", args, code, out, errOut)
		}
	}
	claude := filepath.Join(home, ".claude", "settings.json")
	gemini := filepath.Join(home, ".gemini", "settings.json")
	project := testutil.SandboxDir(t, "sc-proj-")
	local := filepath.Join(project, ".claude", "settings.local.json")
	os.MkdirAll(filepath.Dir(local), 0o755)
	os.WriteFile(filepath.Join(project, ".claude", "commands.md"), []byte("kept\n"), 0o644)

	t.Run("one-line file", func(t *testing.T) {
		orig := `{"model":"opus", "permissions": {"allow": ["Bash(ls:*)", "Read"]}}`
		os.MkdirAll(filepath.Dir(claude), 0o755)
		os.WriteFile(claude, []byte(orig), 0o640)
		integrate("claude-code")
		if got, _ := os.ReadFile(claude); !strings.Contains(string(got), "hook claude-code") {
			t.Fatalf("not installed:\n%s", got)
		}
		integrate("claude-code", "--remove")
		if got, _ := os.ReadFile(claude); string(got) != orig {
			t.Fatalf("after --remove:\n%q\nwant:\n%q", got, orig)
		}
		if fi, _ := os.Stat(claude); fi.Mode().Perm() != 0o640 {
			t.Errorf("the file's mode became %o", fi.Mode().Perm())
		}
	})
	t.Run("gemini without enableHooks", func(t *testing.T) {
		orig := "{\n    \"theme\": \"dark\",\n    \"list\": [1, 2, 3]\n}\n"
		os.MkdirAll(filepath.Dir(gemini), 0o755)
		os.WriteFile(gemini, []byte(orig), 0o644)
		integrate("gemini-cli")
		integrate("gemini-cli", "--remove")
		if got, _ := os.ReadFile(gemini); string(got) != orig {
			t.Fatalf("after --remove:\n%q\nwant:\n%q", got, orig)
		}
	})
	t.Run("a file it created", func(t *testing.T) {
		os.RemoveAll(filepath.Dir(claude))
		integrate("claude-code")
		integrate("claude-code", "--remove")
		if _, err := os.Lstat(filepath.Dir(claude)); !os.IsNotExist(err) {
			t.Fatalf("after --remove %s is still there (%v)", filepath.Dir(claude), err)
		}
		// In a project's .claude, which holds another file: the file goes,
		// the folder stays.
		integrate("claude-code", "--project", project)
		integrate("claude-code", "--project", project, "--remove")
		if _, err := os.Lstat(local); !os.IsNotExist(err) {
			t.Fatalf("after --remove %s is still there (%v)", local, err)
		}
		if got, _ := os.ReadFile(filepath.Join(project, ".claude", "commands.md")); string(got) != "kept\n" {
			t.Fatal("the project's other file went")
		}
	})
	t.Run("edited since", func(t *testing.T) {
		orig := `{"model":"opus"}`
		os.MkdirAll(filepath.Dir(claude), 0o755)
		os.WriteFile(claude, []byte(orig), 0o644)
		integrate("claude-code")
		got, _ := os.ReadFile(claude)
		edited := strings.Replace(string(got), `"model": "opus"`, `"model": "sonnet"`, 1)
		os.WriteFile(claude, []byte(edited), 0o644)
		integrate("claude-code", "--remove")
		back, _ := os.ReadFile(claude)
		if strings.Contains(string(back), "hook claude-code") || !strings.Contains(string(back), `"sonnet"`) {
			t.Fatalf("after --remove of an edited file:\n%s", back)
		}
	})
}
