package escapetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// User is one way an engine runs its sandboxes: as root with the nobody
// user, or as an ordinary user (a root test engine imitates it with uid
// 1000, which the backend then runs as, unprivileged, as on a desktop).
type User struct {
	Name string
	// Cred is Spec.User; nil for an engine that is not root.
	Cred *backends.Credential
}

// Users are the ways this test process can run sandboxes: both as root,
// only its own user otherwise.
func Users() []User {
	if os.Geteuid() != 0 {
		return []User{{"ordinary_user", nil}}
	}
	return []User{
		{"root_engine", &backends.Credential{UID: 65534, GID: 65534}},
		{"ordinary_user", &backends.Credential{UID: 1000, GID: 1000}},
	}
}

// UID is the host uid a sandbox of u runs as.
func (u User) UID() int {
	if u.Cred == nil {
		return os.Geteuid()
	}
	return int(u.Cred.UID)
}

// Dirs is a throwaway tree: Base (0711, under os.TempDir()) holding the
// workspace WS (owned by the sandbox user), and an Outside directory
// under /var/tmp (which open mode sees: a sandbox's /tmp is its own) that
// the sandbox user could write on the host, holding "file" ("original").
type Dirs struct {
	Base, WS, Outside string
}

// NewDirs makes a Dirs for u, with names starting with prefix, removed
// when the test ends.
func NewDirs(t *testing.T, u User, prefix string) Dirs {
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
