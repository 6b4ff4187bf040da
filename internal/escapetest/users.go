package escapetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// Dirs is a throwaway tree: Base (0711, under os.TempDir()) holding the
// workspace WS (owned by the sandbox user), and an Outside directory
// under /var/tmp (which open mode sees: a sandbox's /tmp is its own) that
// the sandbox user could write on the host, holding "file" ("original").
type Dirs struct {
	Base, WS, Outside string
}

// NewDirs makes a Dirs for the sandbox user u, with names starting with prefix, removed
// when the test ends.
func NewDirs(t *testing.T, u testutil.SandboxUser, prefix string) Dirs {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	base, err := os.MkdirTemp("", prefix)
	must(err)
	t.Cleanup(func() { os.RemoveAll(base) })
	out, err := os.MkdirTemp("/var/tmp", prefix)
	must(err)
	t.Cleanup(func() { os.RemoveAll(out) })
	d := Dirs{Base: base, WS: filepath.Join(base, "ws"), Outside: filepath.Join(out, "outside")}
	must(os.Chmod(base, 0o711))
	must(os.Chmod(out, 0o755))
	must(os.Mkdir(d.WS, 0o755))
	must(os.Mkdir(d.Outside, 0o777))
	must(os.Chmod(d.Outside, 0o777))
	must(os.WriteFile(filepath.Join(d.Outside, "file"), []byte("original"), 0o666))
	if os.Geteuid() == 0 {
		must(os.Chown(d.WS, u.UID(), u.UID()))
	}
	return d
}
