package desktop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// fakeWindow shows a window process that is a shell: it counts the show
// requests on its show pipe in a file and ends with the code written to a
// second file (or 0 on SIGTERM). It returns once the shell runs.
func fakeWindow(t *testing.T) (*WindowProcess, string, chan int) {
	t.Helper()
	dir := t.TempDir()
	script := `trap 'exit 0' TERM
echo started >> "$1/starts"
(shows=0; while [ "$(head -c1 <&3 | wc -c)" = 1 ]; do shows=$((shows+1)); echo $shows > "$1/shows"; done) &
while [ ! -e "$1/close" ]; do sleep 0.02; done
exit $(cat "$1/close")`
	exited := make(chan int, 4)
	w := &WindowProcess{
		Command: func() *exec.Cmd { return exec.Command("/bin/sh", "-c", script, "sh", dir) },
		Exited:  func(code int) { exited <- code },
		Logger:  discard(),
	}
	if err := w.Show(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "starts"), "started")
	return w, dir, exited
}

func waitFile(t *testing.T, path, want string) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, path+" to read "+want, func() bool {
		b, _ := os.ReadFile(path)
		return strings.TrimSpace(string(b)) == want
	})
}

func TestWindowProcessStartsShowsAndEnds(t *testing.T) {
	t.Parallel()
	w, dir, exited := fakeWindow(t)
	pid, ok := w.Running()
	if !ok || pid <= 0 {
		t.Fatalf("Running() = %d, %v after Show", pid, ok)
	}
	// A second Show brings the running window forward, it starts no other.
	if err := w.Show(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "shows"), "1")
	if p2, _ := w.Running(); p2 != pid {
		t.Fatalf("a second Show started another process (%d, was %d)", p2, pid)
	}
	// The person closes the window: Exited gets the code, and the next
	// Show starts a new window.
	os.WriteFile(filepath.Join(dir, "close"), []byte("7"), 0o644)
	select {
	case code := <-exited:
		if code != 7 {
			t.Fatalf("Exited(%d), want 7", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Exited was not called when the window process ended")
	}
	if _, ok := w.Running(); ok {
		t.Fatal("Running() after the window process ended")
	}
	os.Remove(filepath.Join(dir, "close"))
	if err := w.Show(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "starts"), "started\nstarted")
	w.Stop()
}

func TestWindowProcessStopEndsItQuietly(t *testing.T) {
	t.Parallel()
	w, _, exited := fakeWindow(t)
	time.Sleep(100 * time.Millisecond)
	var wg sync.WaitGroup
	for range 3 { // Stop is idempotent and safe from many goroutines
		wg.Add(1)
		go func() { defer wg.Done(); w.Stop() }()
	}
	wg.Wait()
	if _, ok := w.Running(); ok {
		t.Fatal("a window process runs after Stop")
	}
	select {
	case code := <-exited:
		t.Fatalf("Exited(%d) called for a window that Stop ended", code)
	case <-time.After(200 * time.Millisecond):
	}
	if err := w.Show(); err == nil {
		t.Fatal("Show after Stop started a window")
	}
}

func TestWindowProcessStopKillsAWindowThatHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits StopGrace")
	}
	t.Parallel()
	w := &WindowProcess{
		Command: func() *exec.Cmd { return exec.Command("/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done") },
		Logger:  discard(),
	}
	if err := w.Show(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	w.Stop()
	if d := time.Since(start); d < StopGrace || d > StopGrace+3*time.Second {
		t.Fatalf("Stop took %v for a window that ignores SIGTERM, want about %v", d, StopGrace)
	}
}

// TestWindowProcessShowAtNamesTheCard: ShowAt asks a running window for a
// card with a "#ANCHOR" line on its show pipe, and a window it starts
// finds that line waiting; Show stays an empty line.
func TestWindowProcessShowAtNamesTheCard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := &WindowProcess{
		Command: func() *exec.Cmd {
			return exec.Command("/bin/sh", "-c", `trap 'exit 0' TERM; echo started >> "$1/starts"; cat <&3 >> "$1/lines" & wait`, "sh", dir)
		},
		Logger: discard(),
	}
	defer w.Stop()
	if err := w.ShowAt("space-apps"); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "lines"), "#space-apps")
	if err := w.Show(); err != nil {
		t.Fatal(err)
	}
	if err := w.ShowAt("space-apps"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "three requests", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "lines"))
		return string(b) == "#space-apps\n\n#space-apps\n"
	})
	waitFile(t, filepath.Join(dir, "starts"), "started")
	if err := w.ShowAt("two\nlines"); err == nil {
		t.Fatal("an anchor with a newline was sent")
	}
}
