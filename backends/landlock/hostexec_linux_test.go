package landlock

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHostExecRunsAsTheEngineWithNoCapabilities: a host exec (Spec.HostExec,
// no user) runs as the engine's own uid, root too, with every capability
// gone for good (none effective, permitted or bounding, root's securebits
// locked), and under the same Landlock domain as a sandbox: nothing
// outside the workspace is written, and the engine's /proc/<pid>/environ
// cannot be read (Landlock's ptrace restriction: the engine is outside
// the run's domain).
func TestHostExecRunsAsTheEngineWithNoCapabilities(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	must(t, os.MkdirAll(ws, 0o700))
	must(t, os.MkdirAll(outside, 0o700))
	spec := newSpec(t, sandboxUser{}, ws, "sh", "-c", `id -u
grep -E '^(CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status
echo x > `+outside+`/f && echo wrote-outside
cat /proc/`+strconv.Itoa(os.Getpid())+`/environ >/dev/null 2>&1 && echo read-environ
ln -s `+outside+` link; echo y > link/g && echo wrote-link
echo ok > inside && echo wrote-inside`)
	spec.User, spec.HostExec = nil, true
	r := run(t, b, spec)
	if r.err != nil || r.status.Code != 0 {
		t.Fatalf("host exec: %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if lines[0] != strconv.Itoa(os.Geteuid()) {
		t.Errorf("ran as uid %s, want the engine's %d", lines[0], os.Geteuid())
	}
	for _, l := range lines[1:5] {
		k, v, _ := strings.Cut(l, ":")
		if strings.TrimSpace(v) != "0000000000000000" {
			t.Errorf("%s is %s, want no capability", k, strings.TrimSpace(v))
		}
	}
	for _, bad := range []string{"wrote-outside", "read-environ", "wrote-link"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("the host exec %s: %s", bad, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "wrote-inside") {
		t.Errorf("the host exec could not write its workspace: %s %s", r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("a file was written outside the workspace")
	}
}
