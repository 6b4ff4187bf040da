package limits

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// TestStartInside: the process started is born in the run's cgroups, in
// every hierarchy; no thread of the engine is left in them; the engine
// never counts among the run's processes.
func TestStartInside(t *testing.T) {
	requireCgroups(t)
	l := Detect()
	if l.version != 1 {
		t.Skip("a thread joins cgroups itself only on v1; v2 moves the process")
	}
	cg, err := l.Create("", RandomRunID(), []string{"memory", "pids", "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove()
	if _, _, err := cg.SetLimits(backends.Limits{Pids: 16, MemoryMB: 64, CPUs: 1}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	inside, err := cg.StartInside(cmd.Start)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if !inside {
		t.Fatal("the process was not started inside")
	}
	home, err := cgroupsIn("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/cgroup", cg.mounts)
	if err != nil {
		t.Fatal(err)
	}
	for c, dir := range cg.dirs {
		if home[c] != dir {
			t.Errorf("the process is in %q of %s, want %q", home[c], c, dir)
		}
	}
	if procs := cg.Procs(); !slices.Equal(procs, []int{cmd.Process.Pid}) {
		t.Errorf("the run's processes are %v, want only %d", procs, cmd.Process.Pid)
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, dir := range cg.dirs {
			if rel, _ := filepath.Rel("/sys/fs/cgroup", dir); strings.Contains(string(b), filepath.Base(rel)) {
				t.Errorf("an engine thread is still in the run's cgroups: %s", b)
			}
		}
	}
}

// RandomRunID is a run id of the form the engine's are.
func RandomRunID() string { return "r" + RandomID() }
