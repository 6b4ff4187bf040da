package bwrap

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// python is the system interpreter (not a pyenv shim from the engine's
// PATH, which the sandbox could not see anyway).
const python = escapetest.Python

// sandboxUser is one way the engine can run (testutil.SandboxUsers).
type sandboxUser = testutil.SandboxUser

func sandboxUsers(t *testing.T) []sandboxUser { return testutil.SandboxUsers() }

// testDirs is escapetest.Dirs: base holding the workspace ws, and outside.
type testDirs struct {
	base, ws, outside string
}

func newTestDirs(t *testing.T, u sandboxUser) testDirs {
	t.Helper()
	d := escapetest.NewDirs(t, u, "senclaw-bwrap-test-")
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
		RunID:     fmt.Sprintf("test-%d", time.Now().UnixNano()),
		Workspace: ws,
		Argv:      argv,
		Env:       []string{"PATH=/usr/bin:/bin", "HOME=" + ws, "SENCLAW_TEST=1"},
		FsMode:    backends.FsStrict,
		User:      u.Cred,
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
const pyPrelude = escapetest.PyPrelude

func trimLines(s string) []string { return strings.Fields(s) }
