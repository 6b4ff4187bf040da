package limits

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// needRoot skips a test that needs root, and fails it under CI=true
// (testutil, which imports this package, cannot be used here).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root")
		}
		t.Skip("this test needs root")
	}
}

// TestARootEngineHasWritableCgroups: root's engine makes its runs'
// cgroups itself and asks systemd for nothing; the card says so.
func TestARootEngineHasWritableCgroups(t *testing.T) {
	needRoot(t)
	h := NewHost(HostOptions{Scope: "senclaw-test-unused"})
	held, detail := h.Held()
	if held != HeldWritable || !strings.Contains(detail, h.Layout().base()) {
		t.Fatalf("held %q: %s", held, detail)
	}
	if c := h.Probe(); c.Backend != FacilityName || !c.Usable() || c.Details["limits"] != string(HeldWritable) || c.Details["unit"] != "" {
		t.Errorf("probe %+v", c)
	}
}

// TestACgroupWithoutControllersIsNotUsable: a cgroup v2 directory the
// engine may write, but which holds a process of its own (the engine's
// cgroup, a desktop terminal's scope), can make tracking cgroups and hand
// down no controller: Writable says yes, usable says why not, so that
// runs fall back to rlimits instead of being refused for a memory.max
// that is not there.
func TestACgroupWithoutControllersIsNotUsable(t *testing.T) {
	needRoot(t)
	root, err := unifiedMount()
	if err != nil {
		t.Fatalf("cgroup v2 is not mounted: %v", err)
	}
	dir := filepath.Join(root, "senclaw-test-"+RandomID())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sleep.Process.Kill()
		sleep.Wait()
		os.Remove(filepath.Join(dir, "senclaw"))
		for i := 0; i < 100 && os.Remove(dir) != nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sleep.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Layout{version: 2, v2: dir}
	if !l.Writable() {
		t.Fatal("no tracking cgroup could be made")
	}
	if err := l.usable(); err == nil || !strings.Contains(err.Error(), "controller is not available") {
		t.Fatalf("usable: %v", err)
	}
}
