package daemon

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/backends/landlock"
	"github.com/senclaw/sandbox/backends/reexec"
	"github.com/senclaw/sandbox/internal/testutil"
)

// asSenclaw makes the test binary act as senclaw itself (for a daemon in
// its own mount namespace); the Landlock helper it starts is dispatched
// first, as main does.
const asSenclaw = "SENCLAW_TEST_AS_SENCLAW"

func TestMain(m *testing.M) {
	reexec.Init()
	if os.Getenv(asSenclaw) == "1" {
		os.Exit(cli.Main(os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Hosting: Hosting{}}))
	}
	testutil.Main(m)
}

// TestABwrapLessMachineIsIsolatedByLandlock runs the daemon in a mount
// namespace of its own where bubblewrap cannot start (/dev/null is bound
// over it), as in a container with the default seccomp profile: the
// machine is still isolated, by Landlock, and a run is confined.
func TestABwrapLessMachineIsIsolatedByLandlock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a mount namespace needs root")
	}
	bwrapPath, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is missing")
		}
		t.Skip("bwrap is missing: nothing to take away")
	}
	if abi, err := landlock.ABIVersion(); err != nil || abi < landlock.MinABI {
		if os.Getenv("CI") == "true" {
			t.Fatalf("landlock is required under CI: %v (ABI %d)", err, abi)
		}
		t.Skip("no usable landlock")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data := cliEnv(t)
	daemon := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind /dev/null "$0" && exec "$@"`, bwrapPath, self, "--data-dir", data, "serve", "--listen", "")
	daemon.Env = append(os.Environ(), asSenclaw+"=1")
	daemon.Stderr = testutil.LogFile(t)
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Signal(syscall.SIGTERM); daemon.Wait() })
	sock := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "senclaw", "api.sock")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
	}
	code, out, errOut := senclaw(t, "caps")
	if code != 0 || !strings.Contains(out, "state: isolated") || !strings.Contains(out, "isolated with landlock") {
		t.Fatalf("caps (%d): %s %s", code, out, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "bwrap ") && strings.Contains(line, "healthy") {
			t.Fatalf("bwrap is healthy in the daemon's namespace: %s", line)
		}
	}
	escape := "/etc/senclaw-bwrapless-escape"
	code, out, errOut = senclaw(t, "run", "--json", "--", "sh", "-c", "echo x > "+escape+"; echo inside > ok && cat ok")
	if code != 0 {
		t.Fatalf("run (%d): %s %s", code, out, errOut)
	}
	var res struct {
		Run struct {
			Isolation string `json:"isolation"`
		} `json:"run"`
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Run.Isolation != "landlock" || res.Stdout != "inside\n" {
		t.Fatalf("run %+v", res)
	}
	if _, err := os.Stat(escape); err == nil {
		os.Remove(escape)
		t.Fatalf("a run of the bwrap-less daemon wrote %s", escape)
	}
}
