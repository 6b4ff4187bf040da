package landlock

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestSysVIPCIsNotShared: a Landlock run has no IPC namespace of its
// own, and System V IPC and POSIX message queues are this machine's,
// guarded by uid and mode only. Such a run can neither find, read nor
// change a 0600 object that a host process made: the desktop user's (the
// real second user's, whose sandboxes an ordinary engine runs as that
// user), the root engine's own, or one of a uid another sandbox of a root
// engine runs as (65534); and it makes none another sandbox could use:
// what a first run tries to make, a second cannot reach.
func TestSysVIPCIsNotShared(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	testutil.RequireRoot(t)
	other := testutil.SecondUser(t)
	b := New(Options{})
	asNobody := exec.Command(python)
	asNobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	objects := map[string]escapetest.IPCObjects{
		"desktop_user": escapetest.MakeIPC(t, other.Command(python), "secret-of-the-desktop-user"),
		"root_engine":  escapetest.MakeIPC(t, exec.Command(python), "secret-of-the-engine"),
		"sandbox_uid":  escapetest.MakeIPC(t, asNobody, "secret-of-another-sandbox"),
	}
	desktop := sandboxUser{Name: "ordinary_engine", Cred: &backends.Credential{UID: uint32(other.UID), GID: uint32(other.GID)}}
	rootEngine := sandboxUser{Name: "root_engine", Cred: &backends.Credential{UID: 65534, GID: 65534}}
	// attempt runs IPCAttempts on o as u and checks that every call was
	// refused by the filter; it returns what the run made.
	attempt := func(t *testing.T, u sandboxUser, o escapetest.IPCObjects) escapetest.IPCObjects {
		t.Helper()
		d := newTestDirs(t, u)
		key, mq := escapetest.IPCKey()
		spec := newSpec(t, u, d.ws, python, "-c", escapetest.IPCAttempts, o.JSON(), strconv.Itoa(key), mq)
		r := run(t, b, spec)
		got, made := escapetest.IPCResults(r.stdout)
		m := escapetest.IPCObjects{Key: key, Shm: -1, Msg: -1, Sem: -1}
		if json.Unmarshal([]byte(made), &m) == nil {
			t.Cleanup(func() { escapetest.RemoveIPC(t, m.JSON()) })
		}
		// What it tried to make, made or not, for another run to try.
		m.MQ = mq
		if r.status.Code != 0 || len(got) == 0 {
			t.Fatalf("exit %+v: %s\n%s", r.status, r.stderr, r.stdout)
		}
		for k, v := range got {
			if v != "refused EPERM" {
				t.Errorf("%s: %q, want refused EPERM (the filter)", k, v)
			}
		}
		return m
	}
	cases := []struct {
		name string
		u    sandboxUser
		of   []string
	}{
		{"ordinary_engine", desktop, []string{"desktop_user"}},
		{"root_engine", rootEngine, []string{"root_engine", "sandbox_uid"}},
	}
	for _, tc := range cases {
		for _, of := range tc.of {
			t.Run(tc.name+"_reaches_"+of, func(t *testing.T) {
				t.Parallel()
				attempt(t, tc.u, objects[of])
				escapetest.CheckIPCUntouched(t, objects[of])
			})
		}
	}
	t.Run("two_sandboxes", func(t *testing.T) {
		t.Parallel()
		made := attempt(t, rootEngine, objects["root_engine"])
		made.Secret = "x"
		attempt(t, rootEngine, made)
	})
}

// TestDevShmIsOutOfReach: POSIX shared memory (shm_open, sem_open) is
// files in the host's /dev/shm, which Landlock keeps out of every fs
// mode, open included: a run as the desktop user's uid (the real second
// user's) can neither read a file that user's program keeps there, nor
// list the folder, nor make a file there.
func TestDevShmIsOutOfReach(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	testutil.RequireRoot(t)
	other := testutil.SecondUser(t)
	name := "/dev/shm/senclaw-landlock-test-" + strconv.Itoa(os.Getpid())
	other.Run(t, "sh", "-c", "umask 077; echo secret-of-the-desktop-user > "+name)
	t.Cleanup(func() { os.Remove(name) })
	u := sandboxUser{Name: "ordinary_engine", Cred: &backends.Credential{UID: uint32(other.UID), GID: uint32(other.GID)}}
	d := newTestDirs(t, u)
	spec := newSpec(t, u, d.ws)
	spec.FsMode = backends.FsOpen
	r := py(t, New(Options{}), spec, fmt.Sprintf(`import os
for what, fn in [("read", lambda: open(%[1]q).read()), ("list", lambda: os.listdir("/dev/shm")),
                 ("make", lambda: open(%[1]q + "-made", "w").write("x"))]:
    try:
        print(what, "ok", fn())
    except OSError as e:
        print(what, "refused", e.errno)
`, name))
	for _, what := range []string{"read", "list", "make"} {
		if !strings.Contains(r.stdout, what+" refused") {
			t.Errorf("%s: %s %s", what, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(name + "-made"); err == nil {
		os.Remove(name + "-made")
		t.Error("the run made a file in /dev/shm")
	}
}
