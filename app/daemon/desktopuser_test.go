//go:build linux

package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// desktopUser is an ordinary user's engine as on a desktop without a
// delegated cgroup: the second user, with no session (no
// XDG_RUNTIME_DIR, so the runtime dir falls back to $TMPDIR), its data
// dir in its home, and the real senclaw binary: the installed package's
// when SENCLAW_INSTALLED names it (make test-install), else this
// module's.
type desktopUser struct {
	m    machine
	u    testutil.OtherUser
	data string
	// config, when set, is the user's XDG_CONFIG_HOME (its own policy
	// file, apart from the other tests' engines of the same user).
	config string
}

func newDesktopUser(t *testing.T) desktopUser {
	t.Helper()
	return startDesktopUser(t, false)
}

// startDesktopUser starts the user's engine; ownConfig gives it a config
// dir of its own.
func startDesktopUser(t *testing.T, ownConfig bool) desktopUser {
	t.Helper()
	testutil.RequireBwrap(t)
	m := sharedMachine(t)
	if p := os.Getenv("SENCLAW_INSTALLED"); p != "" {
		m.bin = p
	}
	u := testutil.SecondUser(t)
	data := filepath.Join(u.Home, fmt.Sprintf("senclaw-data-%d", time.Now().UnixNano()))
	t.Cleanup(func() { os.RemoveAll(data) })
	d := desktopUser{m: m, u: u, data: data}
	if ownConfig {
		d.config = data + "-config"
		u.Run(t, "/bin/mkdir", "-m", "700", d.config)
		t.Cleanup(func() { os.RemoveAll(d.config) })
	}
	startServe(t, d.command("serve", "--listen", ""), 60*time.Second)
	return d
}

// command is senclaw with args as the second user.
func (d desktopUser) command(args ...string) *exec.Cmd {
	cmd := d.u.Command(d.m.bin, append([]string{"--data-dir", d.data}, args...)...)
	// Docker is not this user's: leave it out of the probes.
	cmd.Env = append(cmd.Env, "TMPDIR="+d.m.tmp, "SENCLAW_BACKENDS=bwrap,landlock,direct")
	if d.config != "" {
		cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+d.config)
	}
	return cmd
}

// senclaw runs the CLI as the second user.
func (d desktopUser) senclaw(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCmd(t, d.command(args...), "")
}

// mustRun runs the CLI as the second user and wants exit 0.
func (d desktopUser) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := d.senclaw(t, args...)
	if code != 0 {
		t.Fatalf("senclaw %s: exit %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// TestAnOrdinaryUserWithoutCgroupsGetsEveryFeature: an ordinary user
// whose engine may make no cgroup (rlimits only, as the card says) runs
// Node, reaches a service of this machine through the network plumbing,
// serves a listen port to the host, traces a run and runs a Space App.
// Under the old RLIMIT_AS fallback Node died at start ("Failed to reserve
// virtual memory for CodeRange") and the forwarder too, so every run
// with network, a listen port or a trace, and every app, was refused
// ("the Unix socket guard could not be set up ... EOF").
func TestAnOrdinaryUserWithoutCgroupsGetsEveryFeature(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		testutil.Need(t, "node is not installed")
	}
	d := newDesktopUser(t)

	t.Run("card", func(t *testing.T) {
		var caps struct {
			Facilities []struct {
				Backend string            `json:"backend"`
				Reason  string            `json:"reason"`
				Details map[string]string `json:"details"`
			} `json:"facilities"`
		}
		if err := json.Unmarshal([]byte(d.mustRun(t, "caps", "--json")), &caps); err != nil {
			t.Fatal(err)
		}
		held := ""
		for _, f := range caps.Facilities {
			if f.Backend == "cgroups" {
				held = f.Details["limits"]
				if !strings.Contains(f.Reason, "RLIMIT_DATA") {
					t.Errorf("the card's reason does not say how memory is limited: %s", f.Reason)
				}
			}
		}
		if held != "rlimits only" {
			t.Fatalf("the card says %q of the limits, want rlimits only: %+v", held, caps.Facilities)
		}
		if out := d.mustRun(t, "caps"); !strings.Contains(out, "rlimits only") {
			t.Errorf("senclaw caps does not say rlimits only:\n%s", out)
		}
		if _, out, _ := d.senclaw(t, "doctor"); !regexp.MustCompile(`(?m)^warn\s+cgroups.*rlimits only`).MatchString(out) {
			t.Errorf("senclaw doctor does not warn of rlimits only:\n%s", out)
		}
	})

	t.Run("node", func(t *testing.T) {
		out := d.mustRun(t, "run", "--memory", "512", "--", "node", "-e", "console.log(6 * 7)")
		if strings.TrimSpace(out) != "42" {
			t.Fatalf("node -e: %q", out)
		}
	})

	t.Run("network", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from the host") })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		out := d.mustRun(t, "run", "--loopback", port, "--", "python3", "-c",
			"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:"+port+"/').read().decode())")
		if strings.TrimSpace(out) != "from the host" {
			t.Fatalf("through the loopback port: %q", out)
		}
	})

	t.Run("listen", func(t *testing.T) {
		port := strconv.Itoa(testutil.FreePort(t))
		out := d.mustRun(t, "run", "--background", "--listen", port, "--", "python3", "-m", "http.server", "--bind", "127.0.0.1", port)
		id := strings.Fields(out)[0]
		t.Cleanup(func() { d.senclaw(t, "kill", id) })
		testutil.WaitFor(t, 30*time.Second, "the sandbox's server at 127.0.0.1:"+port, func() bool {
			resp, err := http.Get("http://127.0.0.1:" + port + "/")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		})
	})

	t.Run("trace", func(t *testing.T) {
		_, _, errOut := d.senclaw(t, "run", "--trace", "--", "cat", "/etc/hostname")
		id := regexp.MustCompile(`senclaw events (r[0-9a-f]+)`).FindStringSubmatch(errOut)
		if id == nil {
			t.Fatalf("a traced run: %s", errOut)
		}
		if out := d.mustRun(t, "events", id[1]); !strings.Contains(out, "/etc/hostname") {
			t.Fatalf("the trace does not show the file read:\n%s", out)
		}
	})

	t.Run("space_app", func(t *testing.T) {
		dir := filepath.Join(d.data+"-app", "notes")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(dir)) })
		if out, err := exec.Command("cp", "-r", filepath.Join(repoRoot, "examples", "space-apps")+"/.", dir).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", d.u.UID, d.u.GID), filepath.Dir(dir)).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		d.mustRun(t, "apps", "add", dir)
		if out := d.mustRun(t, "apps", "start", "notes"); !strings.Contains(out, "notes running") {
			t.Fatalf("apps start: %s", out)
		}
		var apps []map[string]any
		if err := json.Unmarshal([]byte(d.mustRun(t, "apps", "ls", "--json")), &apps); err != nil || len(apps) != 1 {
			t.Fatalf("apps ls: %v %v", apps, err)
		}
		resp, err := http.Get(apps[0]["url"].(string) + "health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("the app's health: %v %v", resp, err)
		}
		resp.Body.Close()
		d.mustRun(t, "apps", "stop", "notes")
	})
	d.mustRun(t, "stop")
}
