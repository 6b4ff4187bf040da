package bwrap

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestSysVIPCIsPrivate: a bwrap sandbox has an IPC namespace of its own
// (--unshare-ipc), so the System V objects and POSIX message queues of
// this machine are not there to find: not the desktop user's (the real
// second user's, with a sandbox of the same uid), not the root engine's,
// and not what another sandbox made in its own namespace. What it makes
// itself works, and goes with it.
func TestSysVIPCIsPrivate(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	testutil.RequireRoot(t)
	other := testutil.SecondUser(t)
	b := New(Options{})
	objects := map[string]escapetest.IPCObjects{
		"desktop_user": escapetest.MakeIPC(t, other.Command(python), "secret-of-the-desktop-user"),
		"root_engine":  escapetest.MakeIPC(t, exec.Command(python), "secret-of-the-engine"),
	}
	// attempt runs IPCAttempts on o as u: nothing of o is found, and what
	// it makes is made (in its own namespace, whose ids mean nothing on
	// the host: they are not removed from there).
	attempt := func(t *testing.T, u sandboxUser, o escapetest.IPCObjects) escapetest.IPCObjects {
		t.Helper()
		d := newTestDirs(t, u)
		key, mq := escapetest.IPCKey()
		spec := newSpec(t, u, d.ws, python, "-c", escapetest.IPCAttempts, o.JSON(), strconv.Itoa(key), mq)
		r := run(t, b, spec)
		got, made := escapetest.IPCResults(r.stdout)
		if r.status.Code != 0 || len(got) == 0 {
			t.Fatalf("exit %+v: %s\n%s", r.status, r.stderr, r.stdout)
		}
		for k, v := range got {
			want := "refused"
			if strings.HasPrefix(k, "make_") {
				want = "ok"
			}
			if !strings.HasPrefix(v, want) {
				t.Errorf("%s: %q, want %s", k, v, want)
			}
		}
		m := escapetest.IPCObjects{Key: key}
		if err := json.Unmarshal([]byte(made), &m); err != nil {
			t.Fatalf("no objects made: %q", made)
		}
		return m
	}
	desktop := sandboxUser{Name: "ordinary_engine", Cred: &backends.Credential{UID: uint32(other.UID), GID: uint32(other.GID)}}
	rootEngine := sandboxUser{Name: "root_engine", Cred: &backends.Credential{UID: 65534, GID: 65534}}
	for _, tc := range []struct {
		u  sandboxUser
		of string
	}{{desktop, "desktop_user"}, {rootEngine, "root_engine"}} {
		t.Run(tc.u.Name, func(t *testing.T) {
			t.Parallel()
			attempt(t, tc.u, objects[tc.of])
			escapetest.CheckIPCUntouched(t, objects[tc.of])
		})
	}
	t.Run("two_sandboxes", func(t *testing.T) {
		t.Parallel()
		made := attempt(t, rootEngine, objects["root_engine"])
		made.Secret = "x"
		attempt(t, rootEngine, made)
	})
}
