package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends"
)

// smallDataDir mounts a tmpfs of sizeMB for a data dir (root only; CI is
// root) and unmounts it when the test ends.
func smallDataDir(t *testing.T, sizeMB int) string {
	t.Helper()
	dir := filepath.Join(testDir(t), "small")
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%dm,mode=0711", sizeMB)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mounting a small tmpfs: %v", err)
		}
		t.Skipf("mounting a small tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestAFullDiskRefusesNewRuns: below minFreeDiskMb of free
// space on the data dir's filesystem a new run is refused with the reason
// and recorded; what was stored stays readable; with room again runs go.
func TestAFullDiskRefusesNewRuns(t *testing.T) {
	t.Parallel()
	data := smallDataDir(t, 96)
	e := newTestEngine(t, []backends.Backend{directBackend(t)}, func(o *Options) { o.DataDir = filepath.Join(data, "senclaw") })
	s := e.Settings()
	s.AllowDirect, s.MinFreeDiskMB = true, 48
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := e.RunOnce(ctx, directConfig(), RunRequest{Command: "echo stored"})
	if err != nil || !before.Record.OK() {
		t.Fatalf("a run with room: %v", err)
	}
	filler := filepath.Join(data, "filler")
	if err := os.WriteFile(filler, make([]byte, 60<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := e.RunOnce(ctx, directConfig(), RunRequest{Command: "echo never"})
	if !IsRefused(err) || !strings.Contains(err.Error(), "less than minFreeDiskMb 48") || !strings.Contains(err.Error(), filepath.Join(data, "senclaw")) {
		t.Fatalf("a run on a full disk: %v", err)
	}
	if res.Record.Stdout != "" || !strings.HasPrefix(res.Record.Isolation, "refused: the data dir's filesystem") {
		t.Fatalf("its record: %+v", res.Record)
	}
	page, err := e.RunsPage("", ListQuery{})
	if err != nil || page.Total != 2 {
		t.Fatalf("runs on a full disk: %d, %v", page.Total, err)
	}
	if got, err := e.Run(before.Record.ID); err != nil || got.Stdout != "stored\n" {
		t.Fatalf("a stored run on a full disk: %+v %v", got, err)
	}
	if got, err := e.Run(res.Record.ID); err != nil || !strings.Contains(got.Error, "minFreeDiskMb") {
		t.Fatalf("the refusal's record: %+v %v", got, err)
	}
	os.Remove(filler)
	if res, err := e.RunOnce(ctx, directConfig(), RunRequest{Command: "true"}); err != nil || !res.Record.OK() {
		t.Fatalf("a run with room again: %v", err)
	}
}

// Settings saved before the run queue keep their bound on runs in
// flight as the bound on background runs.
func TestSavedMaxRunsBecomesMaxBackgroundRuns(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	opts := e.opts
	e.Close()
	st, err := store.Open(filepath.Join(opts.DataDir, "senclaw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutSetting("app", map[string]any{"maxRuns": 7, "defaultPids": 300}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	// An engine of that version wrote no policy file, whose values would
	// be read back over the store's.
	if err := os.Remove(e.ownerPolicyPath()); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	e2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if s := e2.Settings(); s.MaxBackgroundRuns != 7 || s.DefaultPids != 300 || s.Concurrency != defaultConcurrency() {
		t.Fatalf("settings after the upgrade: %+v", s)
	}
}
