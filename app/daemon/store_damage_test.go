package daemon

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/internal/testutil"
)

// damagedStore makes data's store and then garbles every page after its
// meta pages (bbolt panicked on opening such a file).
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

// TestADaemonWithADamagedStoreSaysSo: the daemon died (bbolt panicked),
// and once it did not, `senclaw run` waited 15 s, started a second
// daemon and exited 1 without the reason, and `senclaw stop` said "not
// running".
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

// TestDoctorRepairsADamagedStore: through the built senclaw, a daemon on
// a store with a garbled leaf of runs says so; senclaw doctor fails the
// store check with the fix; senclaw doctor --repair makes a new store of
// what can be read (the settings, the other runs), keeps the damaged one,
// and starts the daemon again on it; runs work.
func TestDoctorRepairsADamagedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a real daemon on a damaged store, repaired (about 13 s); make test-go runs it")
	}
	t.Parallel()
	testutil.RequireBwrap(t)
	d := buildDaemon(t)
	path := filepath.Join(d.data, "senclaw.db")
	if err := os.MkdirAll(d.data, 0o711); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutSetting("app", map[string]any{"defaultPids": 300}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		id := fmt.Sprintf("r%05d", i)
		if err := s.PutRun(id, "sb", map[string]any{"id": id, "sandboxId": "sb", "state": "done", "kind": "exec"}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b, _ := os.ReadFile(path)
	garbled := false
	for p := 2; p < len(b)/4096 && !garbled; p++ {
		page := b[p*4096 : (p+1)*4096]
		if page[8] == 0x02 && bytes.Contains(page, []byte(`"r01000"`)) {
			rand.New(rand.NewSource(int64(p))).Read(page[16:])
			garbled = true
		}
	}
	if !garbled {
		t.Fatal("no leaf of runs to garble")
	}
	os.WriteFile(path, b, 0o600)

	d.start()
	code, out := d.cli("doctor")
	if code != 1 || !strings.Contains(out, "fail  store") || !strings.Contains(out, "store damaged: ") || !strings.Contains(out, "senclaw doctor --repair") {
		t.Fatalf("senclaw doctor: %d %s", code, out)
	}
	code, out = d.cli("doctor", "--repair")
	if code != 0 || !strings.Contains(out, "repaired  made a new store") || !strings.Contains(out, "the daemon runs again") || !strings.Contains(out, "ok    store") {
		t.Fatalf("senclaw doctor --repair: %d %s", code, out)
	}
	d.stopped() // the first daemon stopped; the CLI started another
	t.Cleanup(func() { d.cli("stop") })
	if kept, _ := filepath.Glob(path + ".before-repair-*"); len(kept) != 1 {
		t.Errorf("the damaged store kept: %v", kept)
	}
	if code, out := d.cli("settings", "--json"); code != 0 || !strings.Contains(out, `"defaultPids": 300`) {
		t.Errorf("settings after the repair: %d %s", code, out)
	}
	if code, out := d.cli("run", "--", "echo", "repaired"); code != 0 || out != "repaired\n" {
		t.Errorf("a run after the repair: %d %q", code, out)
	}
	code, out = d.cli("runs", "--json", "--limit", "5000")
	if n := strings.Count(out, `"sandboxId": "sb"`); code != 0 || n < 1000 || n >= 2000 {
		t.Errorf("runs after the repair: %d, %d of the 2000", code, n)
	}
}

// TestEveryCommandSaysADamagedStore: each command that asks the daemon
// says an engine that could not start as a refusal (exit 126) with the
// reason and senclaw doctor, at once (ls, rm, kill, runs, caps, policy,
// ps and url exited 1).
func TestEveryCommandSaysADamagedStore(t *testing.T) {
	data := cliEnv(t)
	if err := os.MkdirAll(data, 0o711); err != nil {
		t.Fatal(err)
	}
	damagedStore(t, data)
	served := serveInProcess(t, data)
	defer func() {
		senclaw(t, "--data-dir", data, "stop")
		<-served
	}()
	for _, args := range [][]string{
		{"ls"}, {"rm", "sbx1"}, {"kill", "sbx1"}, {"runs"}, {"caps"}, {"policy"}, {"ps"}, {"url"},
		{"events", "r1"}, {"create"}, {"run", "--sandbox", "sbx1", "--", "true"}, {"logs", "r1"},
		{"cp", "sbx1:/a", filepath.Join(t.TempDir(), "a")}, {"schedule", "ls"}, {"apps", "ls"}, {"settings"},
	} {
		start := time.Now()
		code, _, errOut := senclaw(t, append([]string{"--data-dir", data}, args...)...)
		if code != 126 || !strings.Contains(errOut, "store damaged: ") || !strings.Contains(errOut, "senclaw doctor") {
			t.Errorf("senclaw %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("senclaw %s took %s", strings.Join(args, " "), d)
		}
	}
}
