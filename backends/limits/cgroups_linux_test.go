package limits

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// requireCgroups is testutil.RequireCgroups, which this package's own
// tests cannot import (testutil imports limits): it skips, and fails
// under CI, unless this user may make cgroups.
func requireCgroups(t *testing.T) {
	t.Helper()
	if !Detect().Writable() {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true, and this test cannot run: needs writable cgroups (cgroup v2, as root or delegated to this user)")
		}
		t.Skip("needs writable cgroups (cgroup v2, as root or delegated to this user)")
	}
}

func TestSweepRemovesEmptyRunCgroupsOnly(t *testing.T) {
	requireCgroups(t)
	l := Detect()
	old := fmt.Sprintf("r%016x%s", time.Now().Add(-2*time.Hour).UnixNano(), RandomID())
	stale, err := l.Create("", old, []string{"memory"})
	if err != nil {
		t.Fatal(err)
	}
	recent, err := l.Create("", fmt.Sprintf("r%016x%s", time.Now().UnixNano(), RandomID()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer recent.Remove()
	busy, err := l.Create("", fmt.Sprintf("r%016x%s", time.Now().Add(-2*time.Hour).UnixNano(), RandomID()), nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait(); busy.KillAll(); busy.Remove() }()
	if err := busy.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if n := l.Sweep(time.Now()); n < len(stale.dirs) {
		t.Fatalf("swept %d, want at least the %d stale dirs", n, len(stale.dirs))
	}
	for _, d := range stale.dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("stale cgroup %s is still there", d)
		}
	}
	for _, d := range busy.dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("a cgroup with a process was removed: %s", d)
		}
	}
	for _, d := range recent.dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("a recent run's empty cgroup was removed: %s", d)
		}
	}
}

// A sandbox's cgroups outlive each of its runs and go with the last one.
func TestSandboxCgroupGoesWithItsLastRun(t *testing.T) {
	requireCgroups(t)
	l := Detect()
	sb := "test-" + RandomID()
	a, err := l.Create(sb, "a-"+RandomID(), []string{"memory", "pids"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Create(sb, "b-"+RandomID(), []string{"memory", "pids"})
	if err != nil {
		t.Fatal(err)
	}
	applied, _, err := a.SetLimits(backends.Limits{MemoryMB: 64, Pids: 16})
	if err != nil || applied[len(applied)-1] != SharedLimits {
		t.Fatalf("applied %q err %v", applied, err)
	}
	for _, d := range a.sandbox.dirs {
		if filepath.Dir(a.dirs[controllerOf(a, d)]) != d {
			t.Errorf("run cgroup %v is not below the sandbox's %s", a.dirs, d)
		}
	}
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range b.sandbox.dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("the sandbox's cgroup went while a run was in it: %v", err)
		}
	}
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range b.sandbox.dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("the sandbox's cgroup %s stayed after its last run", d)
		}
	}
	if _, err := l.Create("../x", "r1", nil); err == nil {
		t.Errorf("a sandbox id with a slash was accepted")
	}
}

// controllerOf returns the controller whose sandbox directory is d.
func controllerOf(cg *Cgroups, d string) string {
	for c, sd := range cg.sandbox.dirs {
		if sd == d {
			return c
		}
	}
	return ""
}
