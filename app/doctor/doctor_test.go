package doctor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// bwrapEngine is an engine with bwrap whose clock the test moves on.
func bwrapEngine(t *testing.T, later *atomic.Int64) *app.Engine {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is not installed, and CI must not skip sandbox tests")
		}
		t.Skip("bwrap is not installed")
	}
	var user *backends.Credential
	if os.Geteuid() == 0 {
		user = &backends.Credential{UID: 65534, GID: 65534}
	}
	root := testutil.SandboxDir(t, "senclaw-doctor-")
	e, err := app.New(app.Options{
		DataDir: filepath.Join(root, "data"), ConfigDir: filepath.Join(root, "config"), RuntimeDir: filepath.Join(root, "run"), HomeDir: root,
		Backends: []backends.Backend{bwrap.New(bwrap.Options{SandboxUser: user})}, EUID: os.Geteuid(), Forwarder: netfwdtest.Path(t),
		Now: func() time.Time { return time.Now().Add(time.Duration(later.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func status(r *Report, name string) Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{}
}

// TestDoctorFindsAndRemovesLeftovers: what runs left (a one-shot's
// workspace, a run's cgroup with a process in it) is found, said, and
// removed by Repair; a deleted sandbox's kept files are listed, never
// removed; the other checks pass on a healthy engine.
func TestDoctorFindsAndRemovesLeftovers(t *testing.T) {
	t.Parallel()
	var later atomic.Int64
	e := bwrapEngine(t, &later)
	ctx := context.Background()
	res, err := e.RunOnce(ctx, app.SandboxConfig{}, app.RunRequest{Command: "true"})
	if err != nil || !res.Record.OK() {
		t.Fatalf("a run: %v", err)
	}
	ws := filepath.Join(e.DataDir(), "workspaces", res.Record.SandboxID)
	// The engine removes a one-shot's workspace just after its answer;
	// what is made there after that is left.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ws); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the one-shot's workspace was not removed")
		}
	}
	if err := os.MkdirAll(filepath.Join(ws, "left"), 0o700); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(e.DataDir(), "workspaces", "deleted0sandbox")
	os.MkdirAll(kept, 0o700)
	orphan := testutil.LeftRun(t, res.Record.SandboxID, res.Record.ID)
	d := New(Options{Engine: e, EUID: os.Geteuid()})
	if rep := d.Check(ctx); status(rep, "leftovers").Status != OK {
		t.Fatalf("a run that just ended counts as left: %+v", status(rep, "leftovers"))
	}
	later.Store(int64(2 * time.Minute))
	rep := d.Check(ctx)
	left := status(rep, "leftovers")
	if left.Status != Warn || !strings.Contains(left.Detail, ws) || !strings.Contains(left.Fix, "--repair") {
		t.Fatalf("leftovers: %+v", left)
	}
	if orphan != nil && !strings.Contains(left.Detail, "cgroup") {
		t.Fatalf("the run's cgroup is not among the leftovers: %+v", left)
	}
	if k := status(rep, "kept files"); !strings.Contains(k.Detail, kept) {
		t.Fatalf("kept files: %+v", k)
	}
	for _, name := range []string{"store", "free space", "bwrap"} {
		if c := status(rep, name); c.Status != OK {
			t.Errorf("%s on a healthy engine: %+v", name, c)
		}
	}
	if !rep.OK {
		t.Fatalf("a healthy engine's report is not ok: %+v", rep.Checks)
	}
	rep, err = d.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Repaired, "\n"), "removed the workspace "+ws) {
		t.Fatalf("repaired: %v", rep.Repaired)
	}
	if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the one-shot workspace is still there: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a deleted sandbox's kept files were removed: %v", err)
	}
	testutil.CheckLeftRunGone(t, orphan, res.Record.SandboxID, res.Record.ID)
	if c := status(rep, "leftovers"); c.Status != OK {
		t.Fatalf("after the repair: %+v", c)
	}
}
