package landlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/escapetest"
)

// TestMain makes the test binary the helper when it is started as one, as
// main does for senclaw.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand {
		os.Exit(RunHelper())
	}
	os.Exit(m.Run())
}

// python is the system interpreter.
const python = escapetest.Python

// requireLandlock skips when the kernel has no usable Landlock, except
// under CI=true, where that is a failure: CI must not go green by skipping.
func requireLandlock(t *testing.T) {
	t.Helper()
	abi, err := ABIVersion()
	if err == nil && abi < MinABI {
		err = fmt.Errorf("landlock ABI %d < %d", abi, MinABI)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("landlock is required under CI: %v", err)
		}
		t.Skipf("landlock not usable: %v", err)
	}
}

// sandboxUser is one way the engine can run: as root with the nobody
// user, or as an ordinary user (a root test engine imitates it with uid
// 1000, which the helper becomes as a root engine's helper would 65534;
// an unprivileged engine's helper stays itself, which engineUser checks).
type sandboxUser struct {
	name string
	cred *backends.Credential
}

func sandboxUsers(t *testing.T) []sandboxUser {
	if os.Geteuid() != 0 {
		return []sandboxUser{{"ordinary_user", nil}}
	}
	return []sandboxUser{
		{"root_engine", &backends.Credential{UID: 65534, GID: 65534}},
		{"ordinary_user", &backends.Credential{UID: 1000, GID: 1000}},
	}
}

func (u sandboxUser) uid() int {
	if u.cred == nil {
		return os.Geteuid()
	}
	return int(u.cred.UID)
}

// testDirs is a throwaway tree: base (0711) holding the workspace (owned
// by the sandbox user), and an "outside" directory under /var/tmp that
// the sandbox user could write on the host.
type testDirs struct {
	base, ws, outside string
}

func newTestDirs(t *testing.T, u sandboxUser) testDirs {
	t.Helper()
	base, err := os.MkdirTemp("", "senclaw-landlock-test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	out, err := os.MkdirTemp("/var/tmp", "senclaw-landlock-test-")
	must(t, err)
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
		RunID:          fmt.Sprintf("test-%d", time.Now().UnixNano()),
		Workspace:      ws,
		WorkspaceExact: true,
		Argv:           argv,
		Env:            []string{"PATH=/usr/bin:/bin", "HOME=" + ws, "SENCLAW_TEST=1", "TMPDIR=/tmp"},
		FsMode:         backends.FsStrict,
		User:           u.cred,
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
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := b.Start(ctx, spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = p.Kill() })
	defer stop()
	st, err := p.Wait()
	return result{out.String(), errb.String(), st, err, p}
}

// py runs a Python program in a sandbox and returns its result.
func py(t *testing.T, b *Backend, spec *backends.Spec, prog string) result {
	t.Helper()
	spec.Argv = []string{python, "-c", prog}
	return run(t, b, spec)
}

func trimLines(s string) []string { return strings.Fields(s) }

func isRefused(err error) bool {
	var re *RefusedError
	return errors.As(err, &re)
}
