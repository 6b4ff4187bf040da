package limits

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// requireCgroups skips tests that need writable cgroups (root here).
func requireCgroups(t *testing.T) {
	t.Helper()
	if !Detect().Writable() {
		t.Skip("cgroups are not writable for this user")
	}
}

func TestSweepRemovesEmptyRunCgroupsOnly(t *testing.T) {
	requireCgroups(t)
	l := Detect()
	old := fmt.Sprintf("r%016x%s", time.Now().Add(-2*time.Hour).UnixNano(), RandomID())
	stale, err := l.Create(old, []string{"memory"})
	if err != nil {
		t.Fatal(err)
	}
	recent, err := l.Create(fmt.Sprintf("r%016x%s", time.Now().UnixNano(), RandomID()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer recent.Remove()
	busy, err := l.Create(fmt.Sprintf("r%016x%s", time.Now().Add(-2*time.Hour).UnixNano(), RandomID()), nil)
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
