package testutil

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StopDaemonAtCleanup stops, when t ends, the daemon of runtimeDir (the
// engine's runtime dir, $XDG_RUNTIME_DIR/senclaw) if one still runs: the
// one the test started, or one senclaw started by itself when a command
// of the test found none answering (a CLI call after the test's own
// daemon was stopped or killed), which no test holds a handle of. It
// finds the daemon by its info file's pid, and ends it with SIGTERM (its
// sandboxes and their mounts go with it), then SIGKILL after 20 s.
// Call it before starting the daemon: cleanups run last first.
func StopDaemonAtCleanup(t testing.TB, runtimeDir string) {
	t.Helper()
	t.Cleanup(func() {
		data, err := os.ReadFile(filepath.Join(runtimeDir, "info.json"))
		if err != nil {
			return
		}
		var info struct {
			Pid int `json:"pid"`
		}
		if json.Unmarshal(data, &info) != nil || info.Pid <= 1 || info.Pid == os.Getpid() || !isDaemon(info.Pid, runtimeDir) {
			return
		}
		t.Logf("stopping the daemon (pid %d) of %s, which the test left running", info.Pid, runtimeDir)
		_ = syscall.Kill(info.Pid, syscall.SIGTERM)
		for deadline := time.Now().Add(20 * time.Second); isDaemon(info.Pid, runtimeDir); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(info.Pid, syscall.SIGKILL)
				break
			}
		}
	})
}

// isDaemon reports whether pid is a senclaw daemon serving runtimeDir:
// alive (no zombie), and its environment or command line names it.
func isDaemon(pid int, runtimeDir string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(proc + "/stat")
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
		return false
	}
	cmdline, _ := os.ReadFile(proc + "/cmdline")
	environ, _ := os.ReadFile(proc + "/environ")
	return strings.Contains(string(cmdline), "serve") &&
		(strings.Contains(string(environ), "XDG_RUNTIME_DIR="+filepath.Dir(runtimeDir)) || strings.Contains(string(cmdline), filepath.Dir(runtimeDir)))
}
