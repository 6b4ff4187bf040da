//go:build linux

package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestStopThenRunAtOnce: `senclaw stop && senclaw run -- true`, with the
// real senclaw starting its daemon each time, works every time: stop
// returns once the daemon has let go of its lock, and a daemon started
// while the old one still holds it (stopped through the API, which
// answers at once; the run starts once the old socket is gone) waits
// for it. Before, about half the
// runs failed ("started a daemon, but it does not answer"; the new
// daemon's log: "already running (pid 0) at ;").
func TestStopThenRunAtOnce(t *testing.T) {
	testutil.RequireBwrap(t)
	m := sharedMachine(t)
	runtime := filepath.Join(m.tmp, "xdg")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	testutil.StopDaemonAtCleanup(t, filepath.Join(runtime, "senclaw"))
	// The data dir where the sandbox user reaches its workspaces.
	env := m.rootEnv(t, "XDG_RUNTIME_DIR="+runtime, "SENCLAW_LISTEN=127.0.0.1:0", "SENCLAW_DATA_DIR="+testutil.SandboxDir(t, "senclaw-stop-"))
	if code, out, errOut := m.senclaw(t, env, "", "run", "--", "true"); code != 0 {
		t.Fatalf("the first run: exit %d %q %q", code, out, errOut)
	}
	sock := filepath.Join(runtime, "senclaw", "api.sock")
	for i := range 8 {
		if i%2 == 1 {
			// POST /daemon/stop answers at once, long before the daemon
			// lets go of its lock: the next daemon waits for it.
			c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}}}
			resp, err := c.Post("http://senclaw/api/sandbox/daemon/stop", "application/json", nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("try %d: POST /daemon/stop: %v %v", i, err, resp)
			}
			resp.Body.Close()
			// Once its socket is gone it takes no run (one sent before
			// may meet it closing: EOF), but it still holds its lock.
			testutil.WaitFor(t, 20*time.Second, "the old daemon's socket to go", func() bool {
				_, err := os.Stat(sock)
				return os.IsNotExist(err)
			})
		} else if code, out, errOut := m.senclaw(t, env, "", "stop"); code != 0 || !strings.Contains(out, "stopped") && !strings.Contains(out, "not running") {
			// Not running: the run before reached the old daemon before
			// it closed its socket.
			t.Fatalf("try %d: stop: exit %d %q %q", i, code, out, errOut)
		}
		code, out, errOut := m.senclaw(t, env, "", "run", "--", "true")
		if code != 0 {
			log, _ := os.ReadFile(filepath.Join(runtime, "senclaw", "daemon.log"))
			t.Fatalf("try %d: stop && run -- true: exit %d %q %q\n--- daemon.log:\n%s", i, code, out, errOut, log)
		}
	}
	m.senclaw(t, env, "", "stop")
}

// TestDockerAdviceForAUserNotInTheDockerGroup: an ordinary user who is
// not in the docker group, whose engine finds Docker's socket closed to
// it, is told so and what to do, by the card and by a run that asks for
// Docker. Before, it was told to start a daemon that was running
// ("start it (systemctl start docker, ...)").
func TestDockerAdviceForAUserNotInTheDockerGroup(t *testing.T) {
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		testutil.Need(t, "no Docker daemon at /var/run/docker.sock")
	}
	testutil.RequireBwrap(t)
	m := sharedMachine(t)
	u := testutil.SecondUser(t)
	data := filepath.Join(u.Home, fmt.Sprintf("senclaw-data-%d", time.Now().UnixNano()))
	t.Cleanup(func() { os.RemoveAll(data) })
	testutil.StopDaemonAtCleanup(t, filepath.Join(m.tmp, "senclaw-"+strconv.Itoa(u.UID)))
	senclaw := func(args ...string) (int, string, string) {
		cmd := u.Command(m.bin, append([]string{"--data-dir", data}, args...)...)
		cmd.Env = append(cmd.Env, "TMPDIR="+m.tmp, "SENCLAW_LISTEN=127.0.0.1:0")
		return runCmd(t, cmd, "")
	}
	defer senclaw("stop")
	want := []string{"refuses " + u.Name, "permission denied", "sudo usermod -aG docker " + u.Name}
	code, out, errOut := senclaw("caps", "--json")
	var caps struct {
		Backends []struct {
			Backend string            `json:"backend"`
			Reason  string            `json:"reason"`
			Details map[string]string `json:"details"`
		} `json:"backends"`
	}
	if err := json.Unmarshal([]byte(out), &caps); code != 0 || err != nil {
		t.Fatalf("caps --json: exit %d, %v %q %q", code, err, out, errOut)
	}
	found := false
	for _, b := range caps.Backends {
		if b.Backend != "docker" {
			continue
		}
		found = true
		for _, w := range want {
			if !strings.Contains(b.Reason, w) {
				t.Errorf("the card's reason for docker does not say %q: %s", w, b.Reason)
			}
		}
		if strings.Contains(b.Reason, "systemctl start docker") || b.Details["daemon"] != "refuses this user" {
			t.Errorf("the card tells the user to start a running daemon, or calls it %q: %s", b.Details["daemon"], b.Reason)
		}
	}
	if !found {
		t.Fatalf("no docker on the card: %s", out)
	}
	code, _, errOut = senclaw("run", "--backend", "docker", "--", "true")
	if code == 0 || !strings.Contains(errOut, "docker group") || strings.Contains(errOut, "systemctl start docker") {
		t.Errorf("run --backend docker: exit %d, stderr %q", code, errOut)
	}
}
