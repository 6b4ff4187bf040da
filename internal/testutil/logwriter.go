package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LogFile is where a process a test starts (a daemon, a server) writes
// its log: a file, not a pipe, so that waiting for the process never
// waits for its children to close one. What it holds goes to t.Log when
// the test ends (shown with -v and when the test fails), never into go
// test's output otherwise. Call it before starting the process, so that
// the process is stopped before the file is read.
func LogFile(t testing.TB) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "process.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		if data, _ := os.ReadFile(f.Name()); len(strings.TrimSpace(string(data))) > 0 {
			t.Logf("the log of a process this test started:\n%s", data)
		}
	})
	return f
}
