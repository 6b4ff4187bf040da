package main

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/store"
)

// damagedStore makes data's store and then garbles every page after its
// meta pages (bbolt panicked on opening such a file: issue #15).
func damagedStore(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(data, "senclaw.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := s.PutRun(strings.Repeat("r", 1+i), "sb", map[string]string{"id": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rand.New(rand.NewSource(15)).Read(b[2*4096:])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestADaemonWithADamagedStoreSaysSo is issue #15's reproduction: the
// daemon died (bbolt panicked), and once it did not, `senclaw run` waited
// 15 s, started a second daemon and exited 1 without the reason, and
// `senclaw stop` said "not running".
func TestADaemonWithADamagedStoreSaysSo(t *testing.T) {
	data := cliEnv(t)
	if err := os.MkdirAll(data, 0o711); err != nil {
		t.Fatal(err)
	}
	damagedStore(t, data)
	served := serveInProcess(t, data)

	start := time.Now()
	code, _, errOut := senclaw(t, "--data-dir", data, "run", "--", "true")
	if code != 126 || !strings.Contains(errOut, "store damaged: ") || !strings.Contains(errOut, "senclaw doctor") {
		t.Errorf("run: code %d stderr %q", code, errOut)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("run took %s to say the store is damaged", d)
	}
	if copies, _ := filepath.Glob(filepath.Join(data, "senclaw.db.damaged-*")); len(copies) != 1 {
		t.Errorf("copies kept aside: %v", copies)
	}
	if code, out, errOut := senclaw(t, "--data-dir", data, "stop"); code != 0 || !strings.Contains(out, "stopped") {
		t.Errorf("stop: %d %q %q", code, out, errOut)
	}
	select {
	case <-served:
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon did not stop")
	}
}
