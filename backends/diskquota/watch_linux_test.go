package diskquota

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func exceededWithin(t *testing.T, w *Watch, d time.Duration) string {
	t.Helper()
	select {
	case <-w.Exceeded():
		return w.Reason()
	case <-time.After(d):
		b, f := w.Usage()
		t.Fatalf("the watchdog did not see the quota passed in %v (it counts %d bytes, %d files)", d, b, f)
		return ""
	}
}

func makeFiles(t *testing.T, dir string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTheWatchdogCountsFiles: 150,000 empty files pass a 16 MB quota (a
// file costs 16 KiB of it), where counting bytes alone saw 6 MB; files in
// directories made afterwards count, hard links once.
func TestTheWatchdogCountsFiles(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	wd := NewWatchdog()
	w := wd.Watch(ws, 16, nil)
	defer w.Stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 150000; i++ {
			select {
			case <-w.Exceeded():
				return
			default:
			}
			_ = os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d", i)), nil, 0o600)
		}
	}()
	reason := exceededWithin(t, w, 60*time.Second)
	<-done
	if !strings.Contains(reason, "files, more than the 1024") {
		t.Fatalf("reason %q", reason)
	}

	ws2 := t.TempDir()
	w2 := wd.Watch(ws2, 1024, nil)
	defer w2.Stop()
	if err := os.MkdirAll(filepath.Join(ws2, "a/b/c"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws2, "a/b/c/x"), make([]byte, 64<<10), 0o600)
	os.Link(filepath.Join(ws2, "a/b/c/x"), filepath.Join(ws2, "a/y"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		bytes, files := w2.Usage()
		if files == 4 && bytes >= 64<<10 {
			break // a, b, c and x (y is x)
		}
		if time.Now().After(deadline) {
			t.Fatalf("counted %d files, %d bytes; want 4 files, at least 64 KiB", files, bytes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	os.RemoveAll(filepath.Join(ws2, "a"))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, files := w2.Usage(); files == 0 {
			break
		}
		if time.Now().After(deadline) {
			_, files := w2.Usage()
			t.Fatalf("%d files still counted after the removal", files)
		}
	}
}

// TestTheWatchdogCountsOpenUnlinkedFiles: a file a run's process holds
// open after unlinking it still takes the disk, and counts.
func TestTheWatchdogCountsOpenUnlinkedFiles(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", `exec 3>held; rm held; dd if=/dev/zero bs=1M count=20 >&3 2>/dev/null; echo ready; exec sleep 30`)
	cmd.Dir = ws
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("the holder: %q %v", buf, err)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Fatalf("the workspace lists %v", entries)
	}
	w := NewWatchdog().Watch(ws, 16, func() []int { return []int{cmd.Process.Pid} })
	defer w.Stop()
	if reason := exceededWithin(t, w, 5*time.Second); !strings.Contains(reason, "MB, more than its 16 MB") {
		t.Fatalf("reason %q", reason)
	}
}

// TestTheWatchdogSeesABurst: 48 MB written in one go into a 16 MB quota
// are seen within a poll.
func TestTheWatchdogSeesABurst(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	w := NewWatchdog().Watch(ws, 16, nil)
	defer w.Stop()
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(ws, "big"), "bs=48M", "count=1").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v %s", err, out)
	}
	if reason := exceededWithin(t, w, 3*time.Second); !strings.Contains(reason, "48 MB, more than its 16 MB") {
		t.Fatalf("reason %q", reason)
	}
}

// TestTheWatchdogsCostFollowsChanges: with 20,000 files in the
// workspace, a look costs what changed since the last, not a walk of
// them all: the engine's CPU time over idle seconds stays under a tenth
// of one walk. (make bench measures it with 150,000.) Not parallel: the
// CPU time is the whole test process's, and the package's other tests
// would count in it.
func TestTheWatchdogsCostFollowsChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a CPU-time measurement over 20,000 files (about 7 s); make test-go runs it")
	}
	watchdogCost(t, 20000)
}

// TestBenchDiskWatchdog measures the watchdog with 150,000 files against
// one walk of them, the old watchdog's cost every second. `make bench`
// runs it; it is skipped otherwise.
func TestBenchDiskWatchdog(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	walk, scan, idle := watchdogCost(t, 150000)
	fmt.Printf("BENCH disk watchdog with 150000 files: one walk %v (the old watchdog's cost every second), first scan %v (once), 2 s of polls %v CPU\n", walk.Round(time.Millisecond), scan.Round(time.Millisecond), idle.Round(time.Millisecond))
}

// watchdogCost fills a workspace with n empty files and measures one walk
// of it, the watchdog's first scan, and its CPU time over 2 s of polls
// with nothing changing, which must stay under a tenth of one walk.
func watchdogCost(t *testing.T, n int) (walk, scan, idle time.Duration) {
	ws := t.TempDir()
	makeFiles(t, ws, n)
	start := time.Now()
	walkUsage(ws)
	walk = time.Since(start)

	wd := NewWatchdog()
	defer wd.Close()
	start = time.Now()
	w := wd.Watch(ws, 4096, func() []int { return []int{os.Getpid()} })
	defer w.Stop()
	scan = time.Since(start)
	if _, files := w.Usage(); files != int64(n) {
		t.Fatalf("counted %d files, want %d", files, n)
	}
	before := cpuTime()
	time.Sleep(2 * time.Second) // 8 polls
	idle = cpuTime() - before
	os.WriteFile(filepath.Join(ws, "f7"), make([]byte, 1<<20), 0o600)
	time.Sleep(300 * time.Millisecond)
	if bytes, _ := w.Usage(); bytes < 1<<20 {
		t.Fatalf("a 1 MiB write is not counted: %d bytes", bytes)
	}
	t.Logf("%d files: one walk %v; the watchdog's first scan %v, then %v of CPU over 2 s of polls", n, walk.Round(time.Millisecond), scan.Round(time.Millisecond), idle.Round(time.Millisecond))
	if idle > walk/10+20*time.Millisecond {
		t.Fatalf("2 s of idle polls cost %v of CPU, one walk %v: the cost grows with the files, not the changes", idle, walk)
	}
	return walk, scan, idle
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
