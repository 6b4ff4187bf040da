package monitor

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// startTree starts `sh -c script` in its own process group and kills the
// whole group when the test ends.
func startTree(t testing.TB, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %q: %v", script, err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return pid
}

// findProc returns the first process whose command starts with prefix.
func findProc(snap Snapshot, prefix string) (Proc, bool) {
	for _, p := range snap.Processes {
		if strings.HasPrefix(p.Command, prefix) {
			return p, true
		}
	}
	return Proc{}, false
}

func TestRealProcessTree(t *testing.T) {
	// `; wait` keeps sh as the parent of both children (otherwise sh may
	// exec the last command) and makes it reap them.
	root := startTree(t, "sleep 30 & yes > /dev/null; wait")
	s := New(Options{Roots: func() map[string][]int { return map[string][]int{"sbx": {root}} }})

	testutil.WaitFor(t, 5*time.Second, "sleep and yes to start", func() bool {
		if err := s.SampleOnce(); err != nil {
			t.Fatalf("SampleOnce: %v", err)
		}
		_, hasYes := findProc(s.Snapshot("sbx"), "yes")
		_, hasSleep := findProc(s.Snapshot("sbx"), "sleep")
		return hasYes && hasSleep
	})
	// What yes really used over the same second, from the kernel: on a
	// loaded machine it may get far less than a core, and the monitor
	// must report what it got, not what an idle machine would give.
	yesPid, _ := findProc(s.Snapshot("sbx"), "yes")
	ticks0, wall0 := cpuTicks(t, yesPid.Pid), time.Now()
	time.Sleep(time.Second)
	if err := s.SampleOnce(); err != nil {
		t.Fatalf("SampleOnce: %v", err)
	}
	used := float64(cpuTicks(t, yesPid.Pid)-ticks0) / clockTicks / time.Since(wall0).Seconds() * 100
	snap := s.Snapshot("sbx")
	t.Logf("snapshot: count %d, cpu %.1f%%, rss %d", snap.Count, snap.CPUPercent, snap.RSSBytes)
	for _, p := range snap.Processes {
		t.Logf("  pid %d ppid %d pgid %d %q cpu %.1f%% rss %d elapsed %v", p.Pid, p.PPid, p.Pgid, p.Command, p.CPUPercent, p.RSSBytes, p.Elapsed)
	}
	if snap.Count != 3 || snap.Processes[0].Pid != root {
		t.Fatalf("want sh, sleep and yes with sh first, got %+v", snap.Processes)
	}
	yes, _ := findProc(snap, "yes")
	sleep, _ := findProc(snap, "sleep")
	if yes.CPUPercent <= sleep.CPUPercent || yes.CPUPercent > 250 || math.Abs(yes.CPUPercent-used) > 5+used/4 {
		t.Errorf("yes at %.1f%% CPU, want busy, about the %.1f%% the kernel counted", yes.CPUPercent, used)
	}
	if sleep.CPUPercent > 5 {
		t.Errorf("sleep at %.1f%% CPU, want about 0", sleep.CPUPercent)
	}
	for _, p := range snap.Processes {
		if p.RSSBytes == 0 || p.Pgid != root || p.Elapsed <= 0 || p.Elapsed > time.Minute {
			t.Errorf("pid %d: rss %d, pgid %d (want %d), elapsed %v", p.Pid, p.RSSBytes, p.Pgid, root, p.Elapsed)
		}
	}
	if yes.PPid != root || sleep.PPid != root {
		t.Errorf("children's parents %d and %d, want %d", yes.PPid, sleep.PPid, root)
	}
	if len(s.History("sbx")) < 2 || snap.CPUPercent < yes.CPUPercent {
		t.Errorf("history %v, total %.1f%%", s.History("sbx"), snap.CPUPercent)
	}

	if !s.Owns("sbx", sleep.Pid) || !s.Owns("sbx", root) {
		t.Error("Owns is false for the sandbox's own processes")
	}
	for _, pid := range []int{os.Getpid(), 1} {
		if s.Owns("sbx", pid) {
			t.Errorf("Owns(%d) is true for a foreign pid", pid)
		}
	}
	// The refusal must come before any signal: if it did not, this test
	// process would be killed here.
	var refusal *NotOwnedError
	if err := s.Kill("sbx", os.Getpid()); !errors.As(err, &refusal) {
		t.Fatalf("Kill(own pid) = %v, want a refusal", err)
	}
	if err := s.Kill("other", yes.Pid); !errors.As(err, &refusal) {
		t.Errorf("Kill through another sandbox = %v, want a refusal", err)
	}

	if err := s.Kill("sbx", yes.Pid); err != nil {
		t.Fatalf("Kill(yes): %v", err)
	}
	// sh reaps it; then it is gone from the host and from the tree.
	testutil.WaitFor(t, 5*time.Second, "yes to be gone", func() bool { return !s.Owns("sbx", yes.Pid) })
	if err := s.SampleOnce(); err != nil {
		t.Fatalf("SampleOnce: %v", err)
	}
	if _, ok := findProc(s.Snapshot("sbx"), "yes"); ok {
		t.Error("yes still listed after Kill")
	}
	if !s.Owns("sbx", sleep.Pid) {
		t.Error("killing yes took sleep with it")
	}
}

// BenchmarkSampleOnce measures one sample of a sandbox with ten processes
// (sh and nine sleeps) on this machine with the real lister.
func BenchmarkSampleOnce(b *testing.B) {
	root := startTree(b, "for i in 1 2 3 4 5 6 7 8 9; do sleep 60 & done; wait")
	s := New(Options{Roots: func() map[string][]int { return map[string][]int{"sbx": {root}} }})
	testutil.WaitFor(b, 5*time.Second, "ten processes", func() bool {
		if err := s.SampleOnce(); err != nil {
			b.Fatalf("SampleOnce: %v", err)
		}
		return s.Snapshot("sbx").Count == 10
	})
	for b.Loop() {
		if err := s.SampleOnce(); err != nil {
			b.Fatal(err)
		}
	}
	refs, _ := NewHostLister().Scan(b.Context())
	b.ReportMetric(float64(len(refs)), "host_procs")
}

// BenchmarkScan measures the pass over all host processes alone.
func BenchmarkScan(b *testing.B) {
	h := NewHostLister()
	for b.Loop() {
		if _, err := h.Scan(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times on Linux.
const clockTicks = 100

// cpuTicks is the user and system time pid has used, read from
// /proc/PID/stat (fields 14 and 15, after the command in parentheses).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}
