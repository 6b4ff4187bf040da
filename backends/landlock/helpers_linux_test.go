package landlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/reexec"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestMain makes the test binary the helper when it is started as one, as
// main does for senclaw.
func TestMain(m *testing.M) {
	reexec.Init()
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

// sandboxUser is one way the engine can run (testutil.SandboxUsers).
type sandboxUser = testutil.SandboxUser

func sandboxUsers(t *testing.T) []sandboxUser { return testutil.SandboxUsers() }

// testDirs is escapetest.Dirs: base holding the workspace ws, and outside.
type testDirs struct {
	base, ws, outside string
}

func newTestDirs(t *testing.T, u sandboxUser) testDirs {
	t.Helper()
	d := escapetest.NewDirs(t, u, "senclaw-landlock-test-")
	return testDirs{d.Base, d.WS, d.Outside}
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
		User:           u.Cred,
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
