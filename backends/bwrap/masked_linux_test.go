package bwrap

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// With Run Python / Run Node off, the engine masks the interpreters
// (Spec.Masked): no way of starting one works, whatever the command,
// while with the masks lifted each of them does.
func TestMaskedInterpretersCannotStart(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	realPython, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Skipf("no system python: %v", err)
	}
	masked := []string{realPython}
	attempts := []string{
		"python3 -c 'print(4*10+2)'",
		python + " -c 'print(4*10+2)'",
		realPython + " -c 'print(4*10+2)'",
		"env python3 -c 'print(4*10+2)'",
		"cp " + realPython + " ./copy && ./copy -c 'print(4*10+2)'",
		"ln -sf " + realPython + " ./link && ./link -c 'print(4*10+2)'",
		"./sysbin/" + filepath.Base(realPython) + " -c 'print(4*10+2)'",
	}
	if node, err := exec.LookPath("/usr/bin/node"); err == nil {
		realNode, _ := filepath.EvalSymlinks(node)
		masked = append(masked, realNode)
		attempts = append(attempts, "node -e 'console.log(4*10+2)'", "sh -c \"nodejs -e 'console.log(4*10+2)'\"")
	}
	script := strings.Join(attempts, "\n") + "\necho end\n"
	for _, u := range sandboxUsers(t) {
		for _, mode := range []backends.FsMode{backends.FsStrict, backends.FsOpen} {
			t.Run(u.Name+"_"+string(mode), func(t *testing.T) {
				t.Parallel()
				spec := func(masks []string) *backends.Spec {
					d := newTestDirs(t, u)
					s := newSpec(t, u, d.ws, "sh", "-c", script)
					s.FsMode = mode
					s.Masked = masks
					s.MaskedRuntimes = []string{backends.RuntimePython, backends.RuntimeNode}
					// The system's programs, mounted again inside the workspace.
					s.Mounts = []backends.Mount{{Source: filepath.Dir(realPython), Target: "sysbin", ReadOnly: true}}
					return s
				}
				r := run(t, b, spec(masked))
				if r.stdout != "end\n" {
					t.Errorf("an interpreter started with its mask on:\n%s\nstderr:\n%s", r.stdout, r.stderr)
				}
				open := run(t, b, spec(nil))
				if n := strings.Count(open.stdout, "42\n"); n != len(attempts) {
					t.Errorf("without masks %d of %d attempts ran: the test proves nothing\n%s\n%s", n, len(attempts), open.stdout, open.stderr)
				}
			})
		}
	}
}
