package netfwd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// A run on a remote engine ends with its whole tree: what it put in the
// background, a new session (setsid) and a double fork included, is
// killed when the command ends, and the pid file is gone; the command's
// exit code is the forwarder's.
func TestReapEndsTheRunsTree(t *testing.T) {
	fwd := netfwdtest.Path(t)
	pidFile := filepath.Join(t.TempDir(), "run.pid")
	mark := "senclaw-reap-" + strings.ReplaceAll(t.Name(), "/", "-")
	script := `exec -a ` + mark + ` sleep 300 & setsid sh -c 'exec -a ` + mark + ` sleep 300' & (sh -c 'exec -a ` + mark + ` sleep 300' &) ; cat "$1" >/dev/null; exit 7`
	cmd := exec.Command(fwd, "--reap", pidFile, "--", "/bin/bash", "-c", script, "sh", pidFile)
	start := time.Now()
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Fatalf("exit %d (%v), want 7", code, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the forwarder took %s", d)
	}
	testutil.WaitFor(t, 5*time.Second, "the run's processes gone", func() bool { return len(testutil.PidsWith(mark)) == 0 })
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("the pid file is still there: %v", err)
	}
}
