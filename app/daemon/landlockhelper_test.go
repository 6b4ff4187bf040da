package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestTheLandlockHelperIsUsedOnlyWhenItReadsTheEngineSetup: the engine
// starts senclaw-landlock for its Landlock runs when one beside it reads
// the setup this engine writes; one of another build (a stale binary
// that could leave a new rule out) is passed over with a warning, and
// the engine starts itself instead, as it does for one in a folder
// another user may write. A daemon built as make build builds it says
// which it uses in its Landlock capability.
func TestTheLandlockHelperIsUsedOnlyWhenItReadsTheEngineSetup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux's")
	}
	bin := filepath.Dir(testutil.Senclaw(t))
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	if got := landlockHelperIn([]string{t.TempDir(), bin}, logger); got != filepath.Join(bin, "senclaw-landlock") {
		t.Errorf("the helper built beside senclaw: found %q", got)
	}
	stale := t.TempDir()
	if err := os.WriteFile(filepath.Join(stale, "senclaw-landlock"), []byte("#!/bin/sh\necho 0123456789abcdef01234567\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := landlockHelperIn([]string{stale, bin}, logger); got != "" {
		t.Errorf("a helper of another build was taken: %q", got)
	}
	if !strings.Contains(logs.String(), "another build") {
		t.Errorf("no warning for the stale helper: %s", logs.String())
	}
	// The helper itself, but in a folder others may write: another user
	// could put a program of theirs there, which a root engine would
	// start as root. It is passed over.
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	helper, err := os.ReadFile(filepath.Join(bin, "senclaw-landlock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(open, "senclaw-landlock"), helper, 0o755); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if got := landlockHelperIn([]string{open, bin}, logger); got != "" {
		t.Errorf("a helper in a folder others may write was taken: %q", got)
	}
	if !strings.Contains(logs.String(), "another user could replace it") {
		t.Errorf("no warning for the helper others could replace: %s", logs.String())
	}
	if out, err := exec.Command(filepath.Join(bin, "senclaw-landlock")).CombinedOutput(); err == nil || !strings.Contains(string(out), "not run by hand") {
		t.Errorf("senclaw-landlock run by hand: %v %s", err, out)
	}

	d := startDaemon(t)
	code, out, errOut := d.cli(t, nil, "caps", "--json")
	if code != 0 {
		t.Fatalf("caps: %d %s", code, errOut)
	}
	if !strings.Contains(out, `"helper": "`+filepath.Join(filepath.Dir(d.bin), "senclaw-landlock")+`"`) && !strings.Contains(out, `"helper":"`+filepath.Join(filepath.Dir(d.bin), "senclaw-landlock")+`"`) {
		t.Errorf("the daemon's landlock capability does not name senclaw-landlock beside it: %s", out)
	}
}
