package app

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// With Run Python and Run Node off, no interpreter starts in a sandbox,
// however the command reaches it; the text check refuses what it can
// recognise early, and the masks stop the rest.
func TestRuntimeSwitchesOffCannotBeWalkedAround(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	realPython, err := filepath.EvalSymlinks(sysPython)
	if err != nil {
		t.Skip(err)
	}
	attempts := []string{
		`sh -c 'python3 -c "print(4*10+2)"'`,
		`p=python3; $p -c 'print(4*10+2)'`,
		`/bin/sh -c "exec ` + realPython + ` -c 'print(4*10+2)'"`,
		`cp ` + realPython + ` ./copy && ./copy -c 'print(4*10+2)'`,
		`ln -sf ` + realPython + ` ./link && ./link -c 'print(4*10+2)'`,
		`sh -c "node -e 'console.log(4*10+2)'"`,
		`env python3 -c 'print(4*10+2)'`,
	}
	run := func(cmd string) string {
		res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Command: cmd})
		if IsRefused(err) {
			return "refused"
		}
		if err != nil {
			t.Fatal(err)
		}
		return res.Stdout
	}
	for _, cmd := range attempts[:2] {
		if out := run(cmd); out != "42\n" {
			t.Fatalf("with the switches on, %q gave %q: the test proves nothing", cmd, out)
		}
	}
	pol := e.Policy()
	pol.RunPython, pol.RunNode = false, false
	if _, err := e.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range attempts {
		if out := run(cmd); strings.Contains(out, "42") {
			t.Errorf("%q started an interpreter with its switch off: %q", cmd, out)
		}
	}
	// A direct sandbox has no barrier to mask with: every run is refused.
	s := e.Settings()
	s.AllowDirect = true
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RunOnce(context.Background(), directConfig(), RunRequest{Command: "echo hi"}); !IsRefused(err) || !strings.Contains(err.Error(), "Run Python and Run Node") {
		t.Errorf("a direct run with the switches off: %v", err)
	}
}

// The engine finds the real files of the host's interpreters: the file
// python3 leads to, and nothing of another runtime.
func TestRuntimeFilesAreTheRealInterpreters(t *testing.T) {
	t.Parallel()
	realPython, err := filepath.EvalSymlinks(sysPython)
	if err != nil {
		t.Skip(err)
	}
	e := directEngine(t)
	py := e.runtimeScan.Files([]string{backends.RuntimePython}, e.runtimeDirs())
	if !slices.Contains(py, realPython) {
		t.Errorf("python files %q lack %s", py, realPython)
	}
	for _, f := range py {
		if backends.RuntimeOfFile(filepath.Base(f)) == backends.RuntimeNode {
			t.Errorf("python files hold %s", f)
		}
	}
}
