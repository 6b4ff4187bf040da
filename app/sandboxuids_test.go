package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/sandboxuid"
	"github.com/senclaw/sandbox/internal/testutil"
)

// idsOf reads "uid\ngid" from a run's output.
func idsOf(t *testing.T, res *RunResult) (uid, gid uint32) {
	t.Helper()
	f := strings.Fields(res.Stdout)
	if len(f) != 2 {
		t.Fatalf("run %+v printed %q, not a uid and a gid", res.Record, res.Stdout)
	}
	u, err1 := strconv.ParseUint(f[0], 10, 32)
	g, err2 := strconv.ParseUint(f[1], 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("run printed %q", res.Stdout)
	}
	return uint32(u), uint32(g)
}

// processUIDs is every live host process's uids (pid -> real, effective,
// saved and filesystem uid, each once); a zombie runs nothing and is left
// out (where pid 1 is slow to reap, a sandbox's bwrap lingers as one).
func processUIDs(t *testing.T) map[int][]uint32 {
	t.Helper()
	out := map[int][]uint32{}
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "status"))
		if err != nil {
			continue
		}
		if strings.Contains(string(data), "\nState:\tZ") {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 5 && f[0] == "Uid:" {
				for _, s := range f[1:] {
					id, _ := strconv.ParseUint(s, 10, 32)
					if !slices.Contains(out[pid], uint32(id)) {
						out[pid] = append(out[pid], uint32(id))
					}
				}
			}
		}
	}
	return out
}

// TestEachSandboxRunsAsAUidOfItsOwn: a root engine runs two one-shots, a
// one-shot in a sandbox made ahead and a persistent sandbox each as a uid
// (and gid) of its own: never nobody, never an account's, none another
// sandbox's, and no host process but the sandbox's own runs as it.
func TestEachSandboxRunsAsAUidOfItsOwn(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	e := aheadEngine(t, 1)
	ctx := context.Background()
	ids := "id -u; id -g"
	ahead, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Argv: []string{"sh", "-c", ids}})
	if err != nil || ahead.Record.AheadID == "" {
		t.Fatalf("no run in a sandbox made ahead: %v %+v", err, ahead)
	}
	// A run's own environment keeps a one-shot from the sandboxes made
	// ahead: these two get sandboxes made for them.
	one, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Command: ids, Env: map[string]string{"A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	two, err := e.RunOnce(ctx, SandboxConfig{}, RunRequest{Command: ids, Env: map[string]string{"A": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(ctx, SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	persistent, err := e.Exec(ctx, sb.ID, RunRequest{Command: ids})
	if err != nil {
		t.Fatal(err)
	}
	taken, err := sandboxuid.ReadTaken(sandboxuid.Host())
	if err != nil {
		t.Fatal(err)
	}
	r := e.uids.pool.Range()
	seen := map[uint32]string{}
	for name, res := range map[string]*RunResult{"made ahead": ahead, "one-shot": one, "another one-shot": two, "persistent": persistent} {
		uid, gid := idsOf(t, res)
		switch {
		case uid == sandboxuid.Nobody || uid == 0 || gid == sandboxuid.Nobody:
			t.Errorf("the %s sandbox ran as uid %d gid %d", name, uid, gid)
		case seen[uid] != "":
			t.Errorf("the %s sandbox ran as uid %d, as the %s one did", name, uid, seen[uid])
		case uid != gid || res.Record.UID != uid:
			t.Errorf("the %s sandbox ran as uid %d gid %d; its record says uid %d", name, uid, gid, res.Record.UID)
		case !r.Contains(uid) || uid == r.First:
			t.Errorf("the %s sandbox's uid %d is not a sandbox's of the range %s", name, uid, r)
		case taken.Why(uid) != "":
			t.Errorf("the %s sandbox's uid %d is %s", name, uid, taken.Why(uid))
		}
		seen[uid] = name
	}
	if got, _ := e.Get(sb.ID); got.UID != persistent.Record.UID {
		t.Errorf("the persistent sandbox is stored with uid %d, ran as %d", got.UID, persistent.Record.UID)
	}

	// While a run of the persistent sandbox goes on, only its processes
	// (and those of the sandbox's next run, started ahead: ready.go) run
	// as its uid; none runs as the finished one-shots' uids.
	rs := waitReadyStart(t, e, sb.ID)
	next := append(rs.proc.Pids(), rs.proc.Pid())
	bg, err := e.Exec(ctx, sb.ID, RunRequest{Command: "sleep 30", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.KillRun(bg.Record.ID)
	var tree []int
	testutil.WaitFor(t, 10*time.Second, "the background run's sleep", func() bool {
		for _, lr := range e.live.runs(sb.ID) {
			tree = lr.proc.Pids()
		}
		return len(tree) > 1
	})
	for pid, uids := range processUIDs(t) {
		for _, uid := range uids {
			switch name := seen[uid]; {
			case name == "persistent" && !containsInt(tree, pid) && !containsInt(e.live.runs(sb.ID)[0].proc.Pids(), pid) && !containsInt(next, pid):
				t.Errorf("pid %d runs as the persistent sandbox's uid %d and is not its run's", pid, uid)
			case name != "" && name != "persistent":
				t.Errorf("pid %d runs as uid %d, the finished %s sandbox's", pid, uid, name)
			}
		}
	}
}

func containsInt(list []int, v int) bool {
	return slices.Contains(list, v)
}

// hostAttacker is someone outside every sandbox: a host service running
// as nobody, or another person on the machine.
type hostAttacker struct {
	name string
	cmd  func(script string) *exec.Cmd
}

func hostAttackers(t *testing.T) []hostAttacker {
	other := testutil.SecondUser(t)
	return []hostAttacker{
		{"host_service_as_nobody", func(script string) *exec.Cmd {
			c := exec.Command("/bin/sh", "-c", script)
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: sandboxuid.Nobody, Gid: sandboxuid.Nobody, Groups: []uint32{}}}
			c.Env = []string{"PATH=/usr/bin:/bin"}
			c.Dir = "/"
			return c
		}},
		{"second_user", func(script string) *exec.Cmd { return other.Command("/bin/sh", "-c", script) }},
	}
}

// TestHostProcessesCannotReachASandbox: a host service running as nobody
// (the uid every sandbox of a root engine ran as) and the machine's other
// person can read neither a running sandbox's environment
// (/proc/PID/environ) nor its files through /proc/PID/root, and cannot
// plant a module in a sandbox made ahead, which the next one-shot would
// import. (The unsandboxed Space App's try is app/spaceapps'
// TestAnUnsandboxedAppCannotReachASandbox.)
func TestHostProcessesCannotReachASandbox(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	e := aheadEngine(t, 1)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, e, sb, "notes.txt", "private notes")
	bg, err := e.Exec(ctx, sb.ID, RunRequest{Command: "exec sleep 60", Background: true, Env: map[string]string{"API_KEY": "s3cret-key"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.KillRun(bg.Record.ID)
	pid := 0
	testutil.WaitFor(t, 10*time.Second, "the sandbox's sleep", func() bool {
		for _, lr := range e.live.runs(sb.ID) {
			for _, p := range lr.proc.Pids() {
				if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
					pid = p
				}
			}
		}
		return pid != 0
	})
	e.ahead.mu.Lock()
	made := e.ahead.ready[0].sb.Workspace
	e.ahead.mu.Unlock()
	proc := "/proc/" + strconv.Itoa(pid)
	for _, a := range hostAttackers(t) {
		t.Run(a.name, func(t *testing.T) {
			for _, try := range []struct{ what, script string }{
				{"read the sandbox's environment", "cat " + proc + "/environ"},
				{"read its files through /proc/PID/root", "cat " + proc + "/root/work/notes.txt || cat " + proc + "/root" + sb.Workspace + "/notes.txt || ls " + proc + "/root/"},
				{"plant json.py in a sandbox made ahead", "echo 'print(\"owned\")' > " + made + "/json.py"},
			} {
				out, err := a.cmd(try.script).CombinedOutput()
				if err == nil || strings.Contains(string(out), "s3cret-key") || strings.Contains(string(out), "private notes") {
					t.Errorf("%s could %s: %v %q", a.name, try.what, err, out)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(made, "json.py")); err == nil {
		t.Fatal("json.py was planted in the sandbox made ahead")
	}
}

// TestOffPathsNeverRunAsASandboxUid: a schedule and the agent shell with
// their switches off run as the engine's own user, never as a uid of the
// sandbox range (nor nobody), and their records say so.
func TestOffPathsNeverRunAsASandboxUid(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	e := bwrapEngine(t)
	ctx := context.Background()
	r := e.uids.pool.Range()
	sched, err := e.SchedulerScript(ctx, ScheduledRun{Name: "off", Language: "bash", Code: "id -u; id -g"})
	if err != nil {
		t.Fatal(err)
	}
	project := testDir(t)
	shell, err := e.AgentShell(ctx, AgentShellRequest{ProjectDir: project, Command: "id -u; id -g"})
	if err != nil {
		t.Fatal(err)
	}
	for name, res := range map[string]*RunResult{"schedule": sched, "agent shell": shell} {
		uid, gid := idsOf(t, res)
		if res.Record.Isolation != "none" || uid != uint32(os.Geteuid()) || gid != uint32(os.Getegid()) || r.Contains(uid) || uid == sandboxuid.Nobody || res.Record.UID != 0 {
			t.Errorf("the %s, switched off, ran as uid %d gid %d (isolation %q, record uid %d); want the engine's own, outside %s", name, uid, gid, res.Record.Isolation, res.Record.UID, r)
		}
	}
}

// TestOldWorkspacesMoveToTheirOwnUidOnce: a store of the shared-uid
// scheme (persistent sandboxes with no uid, their workspaces nobody's)
// gets a uid per sandbox at the engine's first start on the new scheme,
// and the files move with it, links changed themselves and never
// followed, a file with a second name (perhaps a host file linked in)
// left alone; the next start changes nothing.
func TestOldWorkspacesMoveToTheirOwnUidOnce(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	root := testDir(t)
	opts := func(o *Options) { o.DataDir = filepath.Join(root, "data") }
	e := bwrapEngine(t, opts)
	sb, err := e.Create(context.Background(), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "outside")
	must(t, os.WriteFile(outside, []byte("host file"), 0o644))
	must(t, os.Chown(outside, sandboxuid.Nobody, sandboxuid.Nobody))
	ws := sb.Workspace
	must(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "sub", "a.txt"), []byte("a"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(ws, "link")))
	must(t, os.Link(outside, filepath.Join(ws, "hardlink")))
	must(t, os.WriteFile(filepath.Join(ws, "roots"), []byte("r"), 0o644)) // the engine's, stays so
	for _, p := range []string{ws, filepath.Join(ws, "sub"), filepath.Join(ws, "sub", "a.txt"), filepath.Join(ws, "link")} {
		must(t, os.Lchown(p, sandboxuid.Nobody, sandboxuid.Nobody))
	}
	// Make it the old scheme's: no uid stored, no scheme recorded.
	old := *sb
	old.UID, old.GID = 0, 0
	must(t, e.store.PutSandbox(sb.ID, old))
	must(t, e.store.PutSetting(uidsKey, struct{}{}))
	e.Close()

	owner := func(p string) uint32 {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Uid
	}
	e2 := bwrapEngine(t, opts)
	got, err := e2.Get(sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	uid := got.UID
	if uid == 0 || uid == sandboxuid.Nobody || !e2.uids.pool.Range().Contains(uid) {
		t.Fatalf("the old sandbox got uid %d", uid)
	}
	for _, p := range []string{ws, filepath.Join(ws, "sub"), filepath.Join(ws, "sub", "a.txt"), filepath.Join(ws, "link")} {
		if o := owner(p); o != uid {
			t.Errorf("%s is uid %d's, not the sandbox's %d", p, o, uid)
		}
	}
	if o := owner(outside); o != sandboxuid.Nobody {
		t.Errorf("the file outside (a link's target, and a hard link's) is now uid %d's", o)
	}
	if o := owner(filepath.Join(ws, "roots")); o != 0 {
		t.Errorf("the engine's own file in the workspace is now uid %d's", o)
	}
	res, err := e2.Exec(context.Background(), sb.ID, RunRequest{Command: "id -u && echo more >> sub/a.txt && cat sub/a.txt"})
	if err != nil || !res.Record.OK() || !strings.HasPrefix(res.Stdout, strconv.Itoa(int(uid))+"\namore") {
		t.Fatalf("the moved sandbox's run: %v %+v %q", err, res.Record, res.Stdout)
	}
	// Once: a file given back to nobody stays so at the next start.
	must(t, os.Lchown(filepath.Join(ws, "sub", "a.txt"), sandboxuid.Nobody, sandboxuid.Nobody))
	e2.Close()
	e3 := bwrapEngine(t, opts)
	again, _ := e3.Get(sb.ID)
	if again.UID != uid || owner(filepath.Join(ws, "sub", "a.txt")) != sandboxuid.Nobody {
		t.Fatalf("the next start moved it again: uid %d (was %d), a.txt uid %d", again.UID, uid, owner(filepath.Join(ws, "sub", "a.txt")))
	}
}

// TestTheRangeIsAboveTheSystemsIDs: with crafted account files the engine
// picks the block above them that no process runs as, and a second engine
// never takes the same block; a range set by hand that
// another engine holds runs nothing, and says why.
func TestTheRangeIsAboveTheSystemsIDs(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	dir := testDir(t)
	sys := sandboxuid.System{Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group"), Subuid: filepath.Join(dir, "subuid"), Subgid: filepath.Join(dir, "subgid"), LoginDefs: filepath.Join(dir, "login.defs"), Proc: filepath.Join(dir, "proc")}
	must(t, os.WriteFile(sys.Passwd, []byte("root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n"), 0o644))
	// This useradd gives new accounts no subordinate ranges.
	must(t, os.WriteFile(sys.LoginDefs, []byte("SUB_UID_COUNT 0\nSUB_GID_COUNT 0\n"), 0o644))
	must(t, os.WriteFile(sys.Subuid, []byte("alice:300000:65536\n"), 0o644))
	// A process runs as the second uid of the block above alice's
	// subordinate range: the engine takes the next block.
	must(t, os.MkdirAll(filepath.Join(sys.Proc, "4242"), 0o755))
	must(t, os.WriteFile(filepath.Join(sys.Proc, "4242", "status"), []byte("Uid:\t393217\t393217\t393217\t393217\nGid:\t0\t0\t0\t0\n"), 0o644))
	claims := filepath.Join(dir, "claims")
	opts := func(o *Options) { o.System, o.UIDClaims = sys, claims }
	e := newTestEngine(t, nil, opts)
	if r := e.uids.pool.Range(); r.String() != "458752-524287" {
		t.Fatalf("the range is %s, want 458752-524287 (the block above alice's subordinate range, 393216-458751, has a process)", r)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("auto")})
	if err != nil {
		t.Fatal(err)
	}
	if sb.UID != 458753 {
		t.Fatalf("the first sandbox has uid %d; want 458753 (458752 is the engine's)", sb.UID)
	}
	e2 := newTestEngine(t, nil, opts)
	if r := e2.uids.pool.Range(); r.String() != "524288-589823" {
		t.Fatalf("a second engine took %s, not the next block", r)
	}
	third := func(o *Options) { opts(o); o.DataDir = filepath.Join(dir, "third") }
	e3 := newTestEngine(t, nil, third)
	s := e3.Settings()
	s.SandboxUIDRange = "458752-458900"
	if _, err := e3.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	e3.Close()
	e3 = newTestEngine(t, nil, third)
	_, err = e3.Create(context.Background(), SandboxConfig{Backend: ptr("auto")})
	if err == nil || !strings.Contains(err.Error(), "another SenClaw engine's") || !strings.Contains(err.Error(), e.DataDir()) {
		t.Fatalf("a sandbox in a range another engine holds: %v", err)
	}
	s.SandboxUIDRange = "300000-300100"
	if _, err := e2.SetSettings(s); err == nil || !strings.Contains(err.Error(), "alice's subordinate range") {
		t.Fatalf("a range over a subordinate range was accepted: %v", err)
	}
}

// etcCopy copies this machine's account files and login.defs into
// dir/etc, for the real useradd and usermod to change (--prefix dir), and
// is their System (with the real /proc).
func etcCopy(t *testing.T, dir string) sandboxuid.System {
	t.Helper()
	etc := filepath.Join(dir, "etc")
	must(t, os.MkdirAll(etc, 0o755))
	for _, name := range []string{"passwd", "group", "shadow", "gshadow", "subuid", "subgid", "login.defs"} {
		data, err := os.ReadFile(filepath.Join("/etc", name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		must(t, os.WriteFile(filepath.Join(etc, name), data, 0o600))
	}
	return sandboxuid.System{Passwd: filepath.Join(etc, "passwd"), Group: filepath.Join(etc, "group"), Subuid: filepath.Join(etc, "subuid"), Subgid: filepath.Join(etc, "subgid"), LoginDefs: filepath.Join(etc, "login.defs"), Proc: "/proc"}
}

// prefixed runs a shadow tool (useradd, usermod) on the files under dir.
func prefixed(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], append([]string{"--prefix", dir}, args[1:]...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestTheRangeStaysTheEngines: the auto range lies where the real
// useradd gives no account made later ids; it is recorded, so a sandbox
// keeps its uid across restarts, and its claim lasts while the engine is
// stopped (a new engine takes another block). When an account is given
// ids of it later, nothing moves behind anyone's back: new sandboxes and
// runs are refused, now and at the next start, saying what overlaps and
// which free block to move to; moving there gives the sandbox a new uid
// with its files, and the old block is free for others.
func TestTheRangeStaysTheEngines(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	dir := testDir(t)
	sys := etcCopy(t, dir)
	claims := filepath.Join(dir, "claims")
	engine := func(name string) func(o *Options) {
		return func(o *Options) { o.System, o.UIDClaims, o.DataDir = sys, claims, filepath.Join(dir, name) }
	}
	ctx := context.Background()
	e := bwrapEngine(t, engine("a"))
	r := e.uids.pool.Range()
	prefixed(t, dir, "useradd", "sc-later1")
	prefixed(t, dir, "useradd", "sc-later2")
	taken, err := sandboxuid.ReadTaken(sys)
	must(t, err)
	if c := taken.Conflicts(r); len(c) > 0 {
		t.Fatalf("useradd gave accounts made after the engine chose %s ids of it: %s", r, strings.Join(c, "; "))
	}
	sb, err := e.Create(ctx, SandboxConfig{})
	must(t, err)
	uid := sb.UID
	e.Close()

	b := newTestEngine(t, nil, engine("b"))
	if rb := b.uids.pool.Range(); rb.First <= r.Last && r.First <= rb.Last {
		t.Fatalf("a new engine took %s while the engine of %s was stopped", rb, r)
	}
	b.Close()

	e = bwrapEngine(t, engine("a"))
	if got, _ := e.Get(sb.ID); e.uids.pool.Range() != r || got.UID != uid {
		t.Fatalf("after a restart the range is %s (was %s) and the sandbox's uid %d (was %d)", e.uids.pool.Range(), r, got.UID, uid)
	}
	if res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "id -u"}); err != nil || strings.TrimSpace(res.Stdout) != strconv.Itoa(int(uid)) {
		t.Fatalf("a run after the restart: %v %+v", err, res)
	}
	// An account is given ids of the range while the engine runs.
	prefixed(t, dir, "usermod", "--add-subuids", fmt.Sprintf("%d-%d", r.First+100, r.First+199), "sc-later1")
	refusedFor := func(err error, what string) string {
		t.Helper()
		m := regexp.MustCompile(`sandboxUidRange=(\d+-\d+)`).FindStringSubmatch(fmt.Sprint(err))
		if err == nil || !strings.Contains(err.Error(), "sc-later1's subordinate range") || m == nil {
			t.Fatalf("%s over a range an account now has ids of: %v", what, err)
		}
		return m[1]
	}
	_, err = e.Create(ctx, SandboxConfig{})
	refusedFor(err, "a new sandbox")
	_, err = e.Exec(ctx, sb.ID, RunRequest{Command: "id -u"})
	refusedFor(err, "a run")
	if u, _ := e.UIDs(); u.Err == nil || len(u.Conflicts) == 0 {
		t.Fatalf("the doctor's view: %+v", u)
	}
	e.Close()
	e = bwrapEngine(t, engine("a"))
	_, err = e.Create(ctx, SandboxConfig{})
	free := refusedFor(err, "a new sandbox after a restart")
	if got, _ := e.Get(sb.ID); got.UID != uid || ownerUID(t, sb.Workspace) != uid {
		t.Fatalf("the sandbox was moved behind the person's back: uid %d (was %d), workspace uid %d", got.UID, uid, ownerUID(t, sb.Workspace))
	}
	// The person moves the engine to the block the error names.
	s := e.Settings()
	s.SandboxUIDRange = free
	_, err = e.SetSettings(s)
	must(t, err)
	e.Close()
	e = bwrapEngine(t, engine("a"))
	got, _ := e.Get(sb.ID)
	if e.uids.pool.Range().String() != free || !e.uids.pool.Range().Contains(got.UID) || ownerUID(t, sb.Workspace) != got.UID {
		t.Fatalf("moved to %s: range %s, uid %d, workspace uid %d", free, e.uids.pool.Range(), got.UID, ownerUID(t, sb.Workspace))
	}
	if res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "id -u"}); err != nil || strings.TrimSpace(res.Stdout) != strconv.Itoa(int(got.UID)) {
		t.Fatalf("a run after the move: %v %+v", err, res)
	}
	if by := sandboxuid.Free(claims, r, filepath.Join(dir, "b")); by != "" {
		t.Fatalf("the block given up is still claimed: %s", by)
	}
}

// ownerUID is the uid that owns path.
func ownerUID(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Lstat(path)
	must(t, err)
	return fi.Sys().(*syscall.Stat_t).Uid
}

// TestAFreedUidWaitsForWhatItsSandboxLeft: once the pool has gone round
// its range, a deleted sandbox's uid goes to a new sandbox only when
// nothing of the old one remains that it owns: the files kept on disk
// are the engine's, and a process the old sandbox left (here started
// beside the engine) keeps the uid from every new sandbox until it ends.
func TestAFreedUidWaitsForWhatItsSandboxLeft(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	dir := testDir(t)
	sys := etcCopy(t, dir)
	opts := func(o *Options) {
		o.System, o.UIDClaims, o.DataDir = sys, filepath.Join(dir, "claims"), filepath.Join(dir, "data")
	}
	ctx := context.Background()
	e := bwrapEngine(t, opts)
	s := e.Settings()
	s.SandboxUIDRange = "700000000-700000063"
	_, err := e.SetSettings(s)
	must(t, err)
	e.Close()
	e = bwrapEngine(t, opts)
	old, err := e.Create(ctx, SandboxConfig{})
	must(t, err)
	if res, err := e.Exec(ctx, old.ID, RunRequest{Command: "echo secret > kept.txt"}); err != nil || !res.Record.OK() {
		t.Fatalf("writing a file: %v %+v", err, res)
	}
	left := exec.Command("sleep", "60")
	left.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: old.UID, Gid: old.GID, Groups: []uint32{}}}
	must(t, left.Start())
	defer func() { left.Process.Kill(); left.Wait() }()
	if _, err := e.Delete(ctx, old.ID, false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old.Workspace, filepath.Join(old.Workspace, "kept.txt")} {
		if o := ownerUID(t, p); o != 0 {
			t.Fatalf("%s, kept on disk, is uid %d's, not the engine's", p, o)
		}
	}
	// Every other uid of the range is held: the next sandbox would get
	// the freed one.
	for {
		id, err := e.uids.pool.Take("filler")
		if err != nil {
			break
		}
		if id == old.UID {
			t.Fatalf("uid %d went round to a new holder while a process of its deleted sandbox runs", id)
		}
	}
	if sb, err := e.Create(ctx, SandboxConfig{}); err == nil {
		t.Fatalf("a new sandbox got uid %d while a process of the deleted sandbox that had it runs", sb.UID)
	}
	left.Process.Kill()
	left.Wait()
	sb, err := e.Create(ctx, SandboxConfig{})
	if err != nil || sb.UID != old.UID {
		t.Fatalf("once nothing of the old sandbox is left: %v, %+v; want uid %d", err, sb, old.UID)
	}
	if res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "cat " + filepath.Join(old.Workspace, "kept.txt")}); err == nil && strings.Contains(res.Stdout, "secret") {
		t.Fatal("the new sandbox read the old one's kept file")
	}
}
