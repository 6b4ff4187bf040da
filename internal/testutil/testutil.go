// Package testutil holds the helpers that the tests of several packages
// share.
//
// They are a free loopback port, a directory a sandbox user can walk into,
// golden files, the users sandboxes run as, a buffer a run may write while
// the test reads it, and the processes a run left.
package testutil

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// SandboxDir makes a fresh directory under the system temp dir, named
// with prefix, that a root engine's unprivileged sandbox user can walk
// through (0711; t.TempDir's parents are 0700), and removes it after the
// test. Keep prefix short where sockets go inside: a socket path must fit
// in 108 bytes.
func SandboxDir(t testing.TB, prefix string) string {
	t.Helper()
	return SandboxDirIn(t, "", prefix)
}

// SandboxDirIn is SandboxDir under parent ("" is the system temp dir):
// /var/tmp, for example, which open mode shows, unlike /tmp.
func SandboxDirIn(t testing.TB, parent, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Golden compares got with the golden file, first rewriting the file when
// update is set (the packages' -update flag).
func Golden(t testing.TB, file, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("differs from %s:\ngot:\n%s", file, got)
	}
}

// SyncBuffer is a bytes.Buffer safe to read while a run writes it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// PidsWith lists the pids of this machine whose command line holds mark
// (a test marks what a run starts, to find what outlived it).
func PidsWith(mark string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(data), mark) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// PrivateDir is a fresh directory of mode 0700, as the engine's runtime
// dir must be (a socket in t.TempDir(), which is 0755, is refused).
func PrivateDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
