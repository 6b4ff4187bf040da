package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/internal/testutil"
)

// The one-shot sandboxes a daemon keeps made ahead, and the ready start of
// a persistent sandbox in use, die with it: after a SIGKILL none of their
// processes is left, and the next start removes their cgroups and
// entries, and the one-shots' workspaces (tmpfs ones included) but not
// the persistent sandbox's; a daemon stopped as usual leaves none of
// those it had ready.
func TestSandboxesMadeAheadDieWithTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a real daemon SIGKILLed with sandboxes made ahead (about 7 s); make test-go runs it")
	}
	t.Parallel()
	testutil.RequireBwrap(t)
	d := buildDaemon(t)
	d.env = append(d.env, "SENCLAW_AHEAD_ONESHOTS=2")
	d.start()
	waitMadeAhead(t, d, 2)
	code, out := d.cli("create", "--name", "kept-ready")
	if code != 0 {
		t.Fatalf("senclaw create: %d %s", code, out)
	}
	persistent := strings.Fields(out)[0]
	if code, out := d.cli("run", "--sandbox", persistent, "--", "true"); code != 0 {
		t.Fatalf("a run in the persistent sandbox: %d %s", code, out)
	}
	// Two one-shots made ahead and the persistent sandbox's ready start.
	ready := waitMadeAhead(t, d, 3)
	// Each process of theirs, held by a pidfd (no pid reused meanwhile
	// is ever looked at).
	var held []int
	for _, pid := range ready {
		for _, p := range append([]int{pid}, descendantsOf(pid)...) {
			if fd, err := unix.PidfdOpen(p, 0); err == nil {
				held = append(held, fd)
			}
		}
	}
	defer func() {
		for _, fd := range held {
			unix.Close(fd)
		}
	}()
	if len(held) < 4 {
		t.Fatalf("the sandboxes made ahead have %d processes, want bwrap and what is inside", len(held))
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.stopped()
	for _, fd := range held {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 10_000); err != nil || n == 0 {
			t.Errorf("a process of a sandbox made ahead outlived the daemon's SIGKILL by 10 s (pidfd %d: %v)", fd, err)
		}
	}
	left := aheadEntries(t, d)
	if len(left) != 3 {
		t.Fatalf("the store names %d sandboxes made ahead, want the 3 there were: %v", len(left), left)
	}
	d.start()
	if _, err := os.Stat(filepath.Join(d.data, "workspaces", persistent)); err != nil {
		t.Errorf("the persistent sandbox's workspace went with its ready start: %v", err)
	}
	for id, runID := range left {
		ws := filepath.Join(d.data, "workspaces", id)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			_, err := os.Stat(ws)
			if os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the workspace of a sandbox the killed daemon made ahead is left: %s", ws)
				break
			}
		}
		if c := runCgroups(runID); len(c) > 0 {
			t.Errorf("the cgroups of a sandbox the killed daemon made ahead are left: %v", c)
		}
	}
	for _, m := range d.mounts() {
		if left[filepath.Base(m)] != "" {
			t.Errorf("the tmpfs of a sandbox the killed daemon made ahead is left: %s", m)
		}
	}
	waitMadeAhead(t, d, 2)
	if code, out := d.cli("stop"); code != 0 {
		t.Fatalf("senclaw stop: %d %s", code, out)
	}
	d.stopped()
	if left := aheadEntries(t, d); len(left) > 0 {
		t.Errorf("a stopped daemon left sandboxes made ahead on record: %v", left)
	}
	if entries, _ := os.ReadDir(filepath.Join(d.data, "workspaces")); len(entries) != 1 {
		t.Errorf("a stopped daemon left %d workspaces, want only the persistent sandbox's", len(entries))
	}
	if m := d.mounts(); len(m) > 0 {
		t.Errorf("a stopped daemon left mounts: %v", m)
	}
}

// waitMadeAhead waits until the daemon has n sandboxes made ahead waiting
// (bwrap children of it whose command is the forwarder waiting for one)
// and returns their bwrap pids.
func waitMadeAhead(t *testing.T, d *daemonProcess, n int) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var found []int
		for _, pid := range childrenOf(d.cmd.Process.Pid) {
			cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			// Made once bwrap's own child and the forwarder inside are
			// there too (a second one may still be starting).
			if strings.Contains(string(cmdline), "\x00--argv-fd\x00") && len(descendantsOf(pid)) >= 2 {
				found = append(found, pid)
			}
		}
		if len(found) == n {
			return found
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon has %d sandboxes made ahead, want %d", len(found), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childrenOf lists the children of pid, of all its threads.
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// descendantsOf lists every process below pid.
func descendantsOf(pid int) []int {
	var out []int
	for _, c := range childrenOf(pid) {
		out = append(append(out, c), descendantsOf(c)...)
	}
	return out
}

// aheadEntries reads, from the store of a daemon that is not running,
// the sandboxes it made ahead: sandbox id -> the id their cgroups carry.
func aheadEntries(t *testing.T, d *daemonProcess) map[string]string {
	t.Helper()
	s, err := store.Open(filepath.Join(d.data, "senclaw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]string{}
	err = s.EachAhead(func(id string, data []byte) error {
		var ent struct {
			RunID string `json:"runId"`
		}
		if err := json.Unmarshal(data, &ent); err != nil {
			return err
		}
		out[id] = ent.RunID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
