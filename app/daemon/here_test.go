package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestHereAsRootWritesTheProject: as root, run --here in a project of
// root's (0755, so the sandbox's own uid may not write it) writes the
// project, through an idmapped mount, and what it writes is root's; the
// record says how. Before, the run met "Permission denied", with no note.
func TestHereAsRootWritesTheProject(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	project := testutil.SandboxDir(t, "senclaw-here-")
	os.Chmod(project, 0o755)
	t.Chdir(project)
	code, out, errOut := senclaw(t, "run", "--json", "--here", "--", "sh", "-c", "echo made here > made-here && cat made-here")
	if code != 0 || !strings.Contains(out, `"stdout": "made here\n"`) {
		t.Fatalf("run --here: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "project "+project+": writable through an idmapped mount") {
		t.Errorf("the record does not say how the project is writable:\n%s", out)
	}
	fi, err := os.Stat(filepath.Join(project, "made-here"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Errorf("made-here is uid %d's on the host, want root's", st.Uid)
	}
}
