package limits

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// TestRealIDsReadsTheRealIDs: the real uid and gid of a process, from
// its /proc status, as prlimitAsOwner borrows them (a process of
// nobody's, started as root); root's own are refused.
func TestRealIDsReadsTheRealIDs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("starting a process as another user needs root")
	}
	if _, _, err := realIDs(os.Getpid()); err == nil {
		t.Fatal("root's ids were taken")
	}
	cmd := exec.Command("sleep", "10")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65533}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	uid, gid, err := realIDs(cmd.Process.Pid)
	if err != nil || uid != 65534 || gid != 65533 {
		t.Fatalf("realIDs: %d %d %v, want 65534 65533", uid, gid, err)
	}
}

// TestCgroupsInReadsEveryLine: a cgroup file is read whole, also when it
// is longer than the first read, and named hierarchies (name=systemd)
// and the unified one (0::) map only the controllers asked for.
func TestCgroupsInReadsEveryLine(t *testing.T) {
	t.Parallel()
	long := "/" + strings.Repeat("x", 2000)
	text := "12:name=systemd:/\n9:cpu,cpuacct:/a\n4:memory:" + long + "\n3:pids:/p\n0::/u\n"
	file := filepath.Join(t.TempDir(), "cgroup")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := cgroupsIn(file, map[string]string{"cpu": "/sys/fs/cgroup/cpu", "memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "/sys/fs/cgroup/cpu/a", "memory": "/sys/fs/cgroup/memory" + long, "pids": "/sys/fs/cgroup/pids/p"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

// TestCgroupFilesAreReadWhole: the run's cgroup files are read into a
// small buffer first; a longer list of pids, or events, is still read
// to its end.
func TestCgroupFilesAreReadWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var want []int
	var procs strings.Builder
	for pid := 100000; pid < 100040; pid++ {
		want = append(want, pid)
		fmt.Fprintf(&procs, "%d\n", pid)
	}
	events := strings.Repeat("low 0\n", 60) + "oom_kill 1\n"
	for name, text := range map[string]string{"cgroup.procs": procs.String(), "memory.events": events} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cg := &Cgroups{version: 2, dirs: map[string]string{"": dir}}
	if got := cg.Procs(); !slices.Equal(got, want) {
		t.Errorf("Procs = %v, want %v", got, want)
	}
	if !cg.OOMKilled() {
		t.Error("OOMKilled = false past the first read of memory.events")
	}
	for _, n := range []int{0, 63, 64, 65, 200} {
		text := strings.Repeat("y", n)
		file := filepath.Join(dir, fmt.Sprintf("f%d", n))
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := readSmall(file, 64); err != nil || string(got) != text {
			t.Errorf("readSmall of %d bytes: %d bytes, %v", n, len(got), err)
		}
	}
}
