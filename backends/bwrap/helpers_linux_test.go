package bwrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// python is the system interpreter (not a pyenv shim from the engine's
// PATH, which the sandbox could not see anyway).
const python = "/usr/bin/python3"

// requireBwrap skips when bwrap is missing, except under CI=true where a
// missing bwrap is a failure: CI must not go green by skipping.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bwrap is required under CI: %v", err)
		}
		t.Skipf("bwrap not installed: %v", err)
	}
}

// sandboxUser is one way the engine can run: as root with the nobody user,
// or as an ordinary user (a root test engine imitates it with uid 1000,
// which makes bwrap run unprivileged exactly like on a desktop).
type sandboxUser struct {
	name string
	cred *backends.Credential
}

func sandboxUsers(t *testing.T) []sandboxUser {
	var out []sandboxUser
	for _, u := range testutil.SandboxUsers() {
		out = append(out, sandboxUser{u.Name, u.Cred})
	}
	return out
}

// uid is the host uid a sandbox of u runs as.
func (u sandboxUser) uid() int { return testutil.SandboxUser{Cred: u.cred}.UID() }

// testDirs is a throwaway tree: base (0711, under os.TempDir()) holding the
// workspace (owned by the sandbox user), and an "outside" directory that
// the sandbox user could write on the host. outside is under /var/tmp so
// that open mode really sees it (the sandbox's /tmp is a fresh tmpfs).
type testDirs struct {
	base, ws, outside string
}

func newTestDirs(t *testing.T, u sandboxUser) testDirs {
	t.Helper()
	base, err := os.MkdirTemp("", "senclaw-bwrap-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	out, err := os.MkdirTemp("/var/tmp", "senclaw-bwrap-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })
	d := testDirs{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(out, "outside")}
	must(t, os.Chmod(base, 0o711))
	must(t, os.Chmod(out, 0o755))
	must(t, os.Mkdir(d.ws, 0o755))
	must(t, os.Mkdir(d.outside, 0o777))
	must(t, os.Chmod(d.outside, 0o777))
	must(t, os.WriteFile(filepath.Join(d.outside, "file"), []byte("original"), 0o666))
	if os.Geteuid() == 0 {
		must(t, os.Chown(d.ws, u.uid(), u.uid()))
	}
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newSpec(t *testing.T, u sandboxUser, ws string, argv ...string) *backends.Spec {
	return &backends.Spec{
		RunID:     fmt.Sprintf("test-%d", time.Now().UnixNano()),
		Workspace: ws,
		Argv:      argv,
		Env:       []string{"PATH=/usr/bin:/bin", "HOME=" + ws, "SENCLAW_TEST=1"},
		FsMode:    backends.FsStrict,
		User:      u.cred,
		// Bound from a checked handle, as the engine asks for its own
		// workspaces and agents' project dirs.
		WorkspaceExact: true,
	}
}

type result struct {
	stdout, stderr string
	status         backends.ExitStatus
	err            error
	proc           backends.Process
}

// run starts spec on b and waits for it, with a deadline.
func run(t *testing.T, b *Backend, spec *backends.Spec) result {
	t.Helper()
	r := testutil.StartAndWait(t, b, spec, 60*time.Second)
	return result{r.Stdout, r.Stderr, r.Status, r.Err, r.Proc}
}

// py runs a Python program in a sandbox and returns its result.
func py(t *testing.T, b *Backend, spec *backends.Spec, prog string) result {
	t.Helper()
	spec.Argv = []string{python, "-c", prog}
	return run(t, b, spec)
}

// pyPrelude gives Python programs a raw syscall helper.
const pyPrelude = `
import ctypes, os, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return 0 if r != -1 else ctypes.get_errno()
`

func trimLines(s string) []string { return strings.Fields(s) }
