package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestTheAppsVerbs drives `senclaw apps` against a daemon with the
// example app: add, ls, start, logs, sandbox (show and change), restart,
// stop and rm, with the documented exit codes.
func TestTheAppsVerbs(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	// An app's port is forwarded by senclaw-netfwd, which the engine
	// finds on PATH when it is not next to the (test) executable.
	t.Setenv("PATH", filepath.Dir(netfwdtest.Path(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	defer stopServed(t, serveInProcess(t, data))
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := senclaw(t, args...)
		if code != want {
			t.Fatalf("senclaw %s: exit %d (want %d)\nstdout %s\nstderr %s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}
	if out, _ := run(0, "apps", "add", filepath.Join(repoRoot, "examples", "space-apps")); strings.TrimSpace(out) != "notes" {
		t.Fatalf("add: %q", out)
	}
	// An app whose manifest turns its sandbox off says so in its row.
	bare := testutil.SandboxDir(t, "senclaw-bareapp-")
	os.Chmod(bare, 0o755)
	if err := os.WriteFile(filepath.Join(bare, "senclaw-app.json"), []byte(`{"id": "bare", "name": "Bare", "runtime": {"start": "sleep 60"}, "sandbox": {"enabled": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run(0, "apps", "add", bare)
	if out, _ := run(0, "apps", "ls"); !strings.Contains(out, "no sandbox (manifest)") || !strings.Contains(out, "on (auto)") {
		t.Fatalf("ls with an app whose manifest turns its sandbox off: %q", out)
	}
	run(0, "apps", "rm", "bare")
	empty := testutil.SandboxDir(t, "senclaw-noapp-")
	if _, errOut := run(2, "apps", "add", empty); !strings.Contains(errOut, "senclaw-app.json") {
		t.Fatalf("add without a manifest: %q", errOut)
	}
	if out, _ := run(0, "apps", "start", "notes"); !strings.Contains(out, "notes running") || !strings.Contains(out, "isolation bwrap") {
		t.Fatalf("start: %q", out)
	}
	out, _ := run(0, "apps", "ls", "--json")
	var apps []map[string]any
	if err := json.Unmarshal([]byte(out), &apps); err != nil || len(apps) != 1 || apps[0]["state"] != "running" {
		t.Fatalf("ls --json: %v %q", err, out)
	}
	url := apps[0]["url"].(string)
	resp, err := http.Get(url + "health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the app's health at %s: %v %v", url, resp, err)
	}
	resp.Body.Close()
	if out, _ := run(0, "apps", "ls"); !strings.Contains(out, "notes") || !strings.Contains(out, "bwrap") || !strings.Contains(out, "strict") {
		t.Fatalf("ls: %q", out)
	}
	if out, _ := run(0, "apps", "logs", "--bytes", "4096", "notes"); !strings.Contains(out, "isolation bwrap") {
		t.Fatalf("logs: %q", out)
	}
	run(2, "apps", "logs", "--bytes", "0", "notes")
	if out, _ := run(0, "apps", "logs", "--clear", "notes"); !strings.Contains(out, "empty") {
		t.Fatalf("logs --clear: %q", out)
	}
	if out, _ := run(0, "apps", "sandbox", "notes"); !strings.Contains(out, "read mode") || !strings.Contains(out, "strict") || !strings.Contains(out, "enforced: network off") {
		t.Fatalf("sandbox: %q", out)
	}
	if _, errOut := run(0, "apps", "sandbox", "--network", "hosts", "--hosts", "pypi.org", "notes"); !strings.Contains(errOut, "needs a restart") || !strings.Contains(errOut, "network") {
		t.Fatalf("sandbox change: %q", errOut)
	}
	if _, errOut := run(2, "apps", "sandbox", "--read-mode", "wide", "notes"); !strings.Contains(errOut, "readMode") {
		t.Fatalf("bad sandbox change: %q", errOut)
	}
	run(0, "apps", "restart", "notes")
	if _, errOut := run(0, "apps", "ls"); strings.Contains(errOut, "needs a restart") {
		t.Fatalf("still needs a restart after one: %q", errOut)
	}
	if out, _ := run(0, "apps", "stop", "notes"); !strings.Contains(out, "notes stopped") {
		t.Fatalf("stop: %q", out)
	}
	run(2, "apps", "start", "nope")
	if out, _ := run(0, "apps", "rm", "--purge", "notes"); !strings.Contains(out, "purged") {
		t.Fatalf("rm: %q", out)
	}
	if out, _ := run(0, "apps", "ls", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("ls after rm: %q", out)
	}
}

// TestAKilledEngineLeavesNoAppBehind: kill -9 of a real daemon leaves no
// process of its apps (a bwrap app dies with it; an unsandboxed one's
// children are ended by the next engine, found by their launch's
// marker), and the next start brings the autostart apps back.
//
// The sandboxed app names bwrap: with "auto" its backend is the first
// whose probe passes, and on a loaded machine the bwrap probe's trial
// sandbox can miss its 5 s, so the app ran under Landlock, whose
// children outlive the engine as an unsandboxed app's do.
func TestAKilledEngineLeavesNoAppBehind(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	root := testutil.SandboxDir(t, "senclaw-kill-")
	testutil.StopDaemonAtCleanup(t, filepath.Join(root, "run", "senclaw"))
	bin := testutil.Senclaw(t)
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(root, "run"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"), "SENCLAW_DATA_DIR=")
	data := filepath.Join(root, "data")
	start := func() *exec.Cmd {
		t.Helper()
		d := exec.Command(bin, "--data-dir", data, "serve", "--listen", "127.0.0.1:0")
		d.Env = env
		stdout, _ := d.StdoutPipe()
		d.Stderr = testutil.LogFile(t)
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() && !strings.HasPrefix(sc.Text(), "socket ") {
		}
		go func() {
			for sc.Scan() {
			}
		}()
		return d
	}
	cli := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, append([]string{"--data-dir", data}, args...)...)
		c.Env = env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("senclaw %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	app := func(id, sandbox, start string) string {
		dir := testutil.SandboxDir(t, "senclaw-kill-app-")
		os.Chmod(dir, 0o755) // listable, as people's folders are: it is copied as the sandbox user
		src, _ := os.ReadFile(filepath.Join(repoRoot, "examples", "space-apps", "app.py"))
		os.WriteFile(filepath.Join(dir, "app.py"), src, 0o644)
		manifest := fmt.Sprintf(`{"id": %q, "name": %q, "runtime": {"start": %q, "autostart": true}, "sandbox": %s}`, id, id, start, sandbox)
		os.WriteFile(filepath.Join(dir, "senclaw-app.json"), []byte(manifest), 0o644)
		return dir
	}
	d := start()
	t.Cleanup(func() { cli("stop") })
	cli("apps", "add", app("boxed", `{"enabled": true, "backend": "bwrap"}`, "sleep 600 & exec python3 app.py"))
	cli("apps", "add", app("plain", `{"enabled": false}`, "sleep 600 & exec python3 app.py"))
	cli("apps", "start", "boxed", "plain")
	markers := map[string]string{}
	for _, id := range []string{"boxed", "plain"} {
		var rt struct {
			Launch struct {
				Env       map[string]string `json:"env"`
				Isolation string            `json:"isolation"`
			} `json:"launch"`
		}
		raw := cliRuntime(t, env, id)
		if err := json.Unmarshal(raw, &rt); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"boxed": "bwrap", "plain": "none"}[id]; rt.Launch.Isolation != want {
			t.Fatalf("%s runs with isolation %q, not %q: what this test says of its end does not hold then\n%s", id, rt.Launch.Isolation, want, raw)
		}
		markers[id] = "SENCLAW_APP_LAUNCH=" + rt.Launch.Env["SENCLAW_APP_LAUNCH"]
		if len(markers[id]) < 30 {
			t.Fatalf("%s: no launch marker in %s", id, raw)
		}
	}
	if n := len(marked(t, markers["boxed"])); n < 2 {
		t.Fatalf("the sandboxed app's processes (sleep, python) are not there: %d", n)
	}
	if err := d.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	testutil.WaitFor(t, 10*time.Second, "the sandboxed app to die with the engine", func() bool { return len(marked(t, markers["boxed"])) == 0 })
	// The unsandboxed app's server died with the engine (its parent-death
	// signal); what it started outlives it, and is ended by the next
	// engine.
	if left := marked(t, markers["plain"]); len(left) == 0 {
		t.Fatal("nothing of the unsandboxed app outlived the engine: this test would not see the next engine's clean-up")
	}
	start() // the cleanup's senclaw stop ends it
	testutil.WaitFor(t, 10*time.Second, "the next engine to end what the unsandboxed app left", func() bool { return len(marked(t, markers["plain"])) == 0 })
	testutil.WaitFor(t, 30*time.Second, "both autostart apps to run again", func() bool {
		out := cli("apps", "ls", "--json")
		return strings.Count(out, `"state": "running"`) == 2
	})
	for id, old := range markers {
		var rt struct {
			Launch struct {
				Env map[string]string `json:"env"`
				N   int               `json:"n"`
			} `json:"launch"`
		}
		json.Unmarshal(cliRuntime(t, env, id), &rt)
		if "SENCLAW_APP_LAUNCH="+rt.Launch.Env["SENCLAW_APP_LAUNCH"] == old || rt.Launch.N != 2 {
			t.Errorf("%s was not launched anew: %+v", id, rt.Launch)
		}
	}
}

// cliRuntime reads an app's runtime through the daemon's socket.
func cliRuntime(t *testing.T, env []string, id string) []byte {
	t.Helper()
	var sock string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "XDG_RUNTIME_DIR="); ok {
			sock = filepath.Join(v, "senclaw", "api.sock")
		}
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := c.Get("http://senclaw/api/space/apps/" + id + "/runtime")
	if err != nil {
		t.Fatalf("reading %s's runtime: %v", id, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return data
}

// marked lists the processes whose environment holds marker.
func marked(t *testing.T, marker string) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains("\x00"+string(env)+"\x00", "\x00"+marker+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}
