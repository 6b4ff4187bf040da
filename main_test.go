package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// cliEnv gives the CLI its own runtime, config and data dirs, the data dir
// traversable by a root engine's unprivileged sandbox user.
func cliEnv(t *testing.T) (dataDir string) {
	t.Helper()
	root := testutil.SandboxDir(t, "senclaw-cli-")
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(root, "run"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("SENCLAW_DATA_DIR", "")
	// The engine finds the forwarder on PATH (next to the test binary
	// there is none): every bwrap run needs it for the Unix socket guard.
	t.Setenv("PATH", filepath.Dir(netfwdtest.Path(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	return filepath.Join(root, "data")
}

func senclaw(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := realMain(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestTheCLIIsAClientOfTheDaemon drives the CLI's commands against a daemon
// served in-process, checking the documented exit codes.
func TestTheCLIIsAClientOfTheDaemon(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is missing")
		}
		t.Skip("bwrap is missing")
	}
	data := cliEnv(t)
	served := make(chan int, 1)
	go func() {
		code, _, errOut := senclaw(t, "--data-dir", data, "serve", "--listen", "127.0.0.1:0")
		if code != 0 {
			t.Log(errOut)
		}
		served <- code
	}()
	sock := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "senclaw", "api.sock")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _, errOut := senclaw(t, "--data-dir", data, "serve", "--listen", ""); code != 2 || !strings.Contains(errOut, "already running") {
		t.Fatalf("a second daemon: %d %q", code, errOut)
	}

	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"exit_code_passes_through", []string{"run", "--", "sh", "-c", "echo out; exit 7"}, 7, "out\n", ""},
		{"timeout_is_124", []string{"run", "--timeout", "1s", "--", "sh", "-c", "echo early; sleep 30"}, 124, "early\n", "timed out"},
		{"bad_flag_is_2", []string{"run", "--memory", "1", "--", "true"}, 2, "", "memoryMb"},
		{"no_command_is_2", []string{"run"}, 2, "", "no command"},
		{"unknown_sandbox", []string{"run", "--sandbox", "nope", "--", "true"}, 2, "", "nope"},
		{"caps", []string{"caps"}, 0, "bwrap", ""},
		{"url", []string{"url"}, 0, "/login?code=", ""},
	}
	for _, tc := range cases {
		code, out, errOut := senclaw(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("%s: code %d stdout %q stderr %q", tc.name, code, out, errOut)
		}
	}

	code, out, _ := senclaw(t, "create", "--name", "cli-test", "--memory", "256")
	id := strings.TrimSpace(out)
	if code != 0 || id == "" {
		t.Fatalf("create: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "run", "--sandbox", id, "--", "sh", "-c", "echo kept > f; cat f"); code != 0 || out != "kept\n" {
		t.Fatalf("run in sandbox: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "ls", "--json"); code != 0 || !strings.Contains(out, "cli-test") {
		t.Fatalf("ls: %d %q", code, out)
	}
	code, out, _ = senclaw(t, "runs", "--json", "--limit", "3")
	var runs []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 3 || runs[0]["isolation"] != "bwrap" {
		t.Fatalf("runs: %d %q", code, out)
	}
	if code, _, _ := senclaw(t, "policy", "--python", "off"); code != 0 {
		t.Fatal("policy")
	}
	if code, _, errOut := senclaw(t, "run", "--", "python3", "-c", "print(1)"); code != 126 || !strings.Contains(errOut, "Run Python") {
		t.Fatalf("refused run: %d %q", code, errOut)
	}
	if code, out, _ := senclaw(t, "policy", "--json"); code != 0 || !strings.Contains(out, `"runPython": false`) {
		t.Fatalf("policy: %q", out)
	}
	if code, out, _ := senclaw(t, "rm", "--purge", id); code != 0 || !strings.Contains(out, "files removed") {
		t.Fatalf("rm: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "stop"); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("stop: %d %q", code, out)
	}
	select {
	case code := <-served:
		if code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon did not stop")
	}
}
