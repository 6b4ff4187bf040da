package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/sandboxuid"
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

// TestDoctorReportsSandboxUidsHostProcessesUse: a host process running as
// a uid of a root engine's sandbox range that no sandbox holds is named
// (uid, pid, command) with what to do; each persistent sandbox's own
// workspace is checked against that sandbox's own uid.
func TestDoctorReportsSandboxUidsHostProcessesUse(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	var later atomic.Int64
	e := bwrapEngine(t, &later)
	ctx := context.Background()
	sb, err := e.Create(ctx, app.SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Engine: e, EUID: os.Geteuid()})
	rep := d.Check(ctx)
	uids, _ := e.UIDs()
	squatter := uids.Range.Last
	// (Processes a killed test's engine left may use other uids of the
	// block: the machine is shared.)
	if c := status(rep, "sandbox uids"); c.Status == Fail || strings.Contains(c.Detail, fmt.Sprintf("uid %d ", squatter)) {
		t.Fatalf("sandbox uids before anything runs as uid %d: %+v", squatter, c)
	}
	if c := status(rep, "sandbox user"); c.Status != OK {
		t.Fatalf("sandbox user: %+v", c)
	}
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: squatter, Gid: squatter, Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	c := status(d.Check(ctx), "sandbox uids")
	want := fmt.Sprintf("uid %d by pid %d (sleep)", squatter, cmd.Process.Pid)
	if c.Status != Warn || !strings.Contains(c.Detail, want) || !strings.Contains(c.Fix, "sandboxUidRange") {
		t.Fatalf("a host process on a sandbox uid: %+v; want %q", c, want)
	}
	// A workspace that is not its own sandbox's uid's (nobody's, as the
	// shared-uid scheme left them) fails, with the chown to fix it.
	if err := os.Chown(sb.Workspace, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	c = status(d.Check(ctx), "sandbox user")
	if c.Status != Fail || !strings.Contains(c.Fix, fmt.Sprintf("chown -R --from=65534 %d:%d %s", sb.UID, sb.GID, sb.Workspace)) {
		t.Fatalf("a workspace of another uid: %+v", c)
	}
}

// TestDoctorSaysWhenTheSandboxRangeIsNotSafe: a range where useradd
// gives accounts made later their ids (an earlier version's auto range)
// warns, naming a free block to move to; once an account is given ids of
// it, the row fails, with the same way out, and no sandbox is made.
func TestDoctorSaysWhenTheSandboxRangeIsNotSafe(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	root := testutil.SandboxDir(t, "senclaw-doctor-")
	sys := sandboxuid.System{Passwd: filepath.Join(root, "passwd"), Subuid: filepath.Join(root, "subuid"), LoginDefs: filepath.Join(root, "login.defs"), Proc: "/proc"}
	if err := os.WriteFile(sys.Passwd, []byte("root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() *app.Engine {
		e, err := app.New(app.Options{
			DataDir: filepath.Join(root, "data"), ConfigDir: filepath.Join(root, "config"), RuntimeDir: filepath.Join(root, "run"), HomeDir: root,
			Backends: []backends.Backend{bwrap.New(bwrap.Options{})}, EUID: os.Geteuid(), Forwarder: netfwdtest.Path(t),
			System: sys, UIDClaims: filepath.Join(root, "claims"),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	e := open()
	s := e.Settings()
	s.SandboxUIDRange = "196608-262143"
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = open()
	ctx := context.Background()
	d := New(Options{Engine: e, EUID: os.Geteuid()})
	c := status(d.Check(ctx), "sandbox uids")
	if c.Status != Warn || !strings.Contains(c.Detail, "SUB_UID_MAX") || !suggestsAFreeBlock(c.Fix) {
		t.Fatalf("a range where useradd gives ids later: %+v", c)
	}
	if err := os.WriteFile(sys.Subuid, []byte("bob:200000:65536\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = status(d.Check(ctx), "sandbox uids")
	if c.Status != Fail || !strings.Contains(c.Detail, "bob's subordinate range") || !suggestsAFreeBlock(c.Fix) {
		t.Fatalf("a range an account now has ids of: %+v", c)
	}
	if _, err := e.Create(ctx, app.SandboxConfig{}); err == nil || !strings.Contains(err.Error(), "bob's subordinate range") {
		t.Fatalf("a new sandbox over a range an account now has ids of: %v", err)
	}
}

// suggestsAFreeBlock reports whether fix moves the engine to a block of
// 65,536 ids above SUB_UID_MAX (600100000). Which block depends on the
// machine: the first, 600113152-600178687, is skipped while another
// engine's sandboxes run as its ids (the other packages' tests, in
// parallel with this one).
func suggestsAFreeBlock(fix string) bool {
	m := regexp.MustCompile(`sandboxUidRange=(\d+)-(\d+)`).FindStringSubmatch(fix)
	if m == nil {
		return false
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	return lo > 600100000 && hi-lo+1 == 65536
}
