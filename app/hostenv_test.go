package app

import (
	"context"
	"strings"
	"testing"
)

// `senclaw run --env LD_PRELOAD=/nonexistent.so -- true`: only the
// command's own ld.so, inside the sandbox, sees the variable; no program
// the engine starts on the host does.
func TestTheRunsEnvironmentReachesOnlyTheCommand(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	for _, traced := range []bool{false, true} {
		if traced {
			requireTracing(t)
		}
		res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Argv: []string{"true"}, Env: map[string]string{"LD_PRELOAD": "/nonexistent.so"}, Trace: traced})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(res.Stderr, "/nonexistent.so"); n != 1 || !res.Record.OK() {
			t.Errorf("traced=%v: ld.so complained %d times, want once (by the command): %q %+v", traced, n, res.Stderr, res.Record)
		}
	}
}

// The same for a traced direct run, where strace and the launcher run
// as the engine's user in front of the command.
func TestATracedDirectRunsEnvironmentReachesOnlyTheCommand(t *testing.T) {
	t.Parallel()
	requireTracing(t)
	e := directEngine(t)
	res, err := e.RunOnce(context.Background(), directConfig(), RunRequest{Argv: []string{"true"}, Env: map[string]string{"LD_PRELOAD": "/nonexistent.so"}, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(res.Stderr, "/nonexistent.so"); n != 1 || !res.Record.OK() || len(res.Record.Missing) > 1 {
		t.Errorf("ld.so complained %d times, want once (by the command): %q %+v", n, res.Stderr, res.Record)
	}
}
