package rundir

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// sharedTmp is a folder every user may write, sticky, as /tmp is.
func sharedTmp(t *testing.T) string {
	t.Helper()
	dir := testutil.SandboxDir(t, "senclaw-rundir-")
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenRefusesAFolderAnotherUserMadeFirst: the second user makes the
// engine's fallback runtime dir first, with links to a file of root's and
// to a place where no file is yet. Open refuses it, naming the folder, the
// owner and the mode; nothing is written through the links.
func TestOpenRefusesAFolderAnotherUserMadeFirst(t *testing.T) {
	u := testutil.SecondUser(t)
	tmp := sharedTmp(t)
	victim := filepath.Join(tmp, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(tmp, "senclaw-0")
	target := filepath.Join(tmp, "made-by-the-engine")
	u.Run(t, "sh", "-c", `mkdir -m 0755 "$1" && ln -s "$2" "$1/info.json" && ln -s "$3" "$1/daemon.lock" && ln -s "$3" "$1/api.sock"`,
		"sh", planted, victim, target)
	_, err := Open(planted)
	var ue *UnsafeError
	if !errors.As(err, &ue) {
		t.Fatalf("Open of another user's folder: %v", err)
	}
	for _, want := range []string{planted, "uid " + strconv.Itoa(u.UID) + " (" + u.Name + ")", "0755", "XDG_RUNTIME_DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if _, err := Check(planted); !errors.As(err, &ue) {
		t.Errorf("Check of another user's folder: %v", err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's\n" {
		t.Errorf("the victim file was changed: %q", data)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("a file was made where a planted link led")
	}
}

// TestOpenRefusesLinksAndOpenModes: a link to a folder of our own, and a
// folder of ours that others may enter, are refused too; a fresh one is
// made 0700.
func TestOpenRefusesLinksAndOpenModes(t *testing.T) {
	root := testutil.PrivateDir(t)
	mine := filepath.Join(root, "mine")
	os.Mkdir(mine, 0o700)
	link := filepath.Join(root, "link")
	os.Symlink(mine, link)
	open := filepath.Join(root, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o750)
	for _, p := range []string{link, open} {
		var ue *UnsafeError
		if _, err := Open(p); !errors.As(err, &ue) {
			t.Errorf("Open(%s): %v", p, err)
		}
	}
	fresh := filepath.Join(root, "a", "senclaw")
	d, err := Open(fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o700 {
		t.Errorf("a fresh runtime dir is %v", fi.Mode())
	}
	if _, err := Check(filepath.Join(root, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check of a missing folder: %v", err)
	}
}

// TestFilesFollowNoLink: inside the folder, a link where the lock, a log
// or a read file should be is refused, and WriteFile replaces a link
// rather than writing where it leads; the socket is bound in the folder.
func TestFilesFollowNoLink(t *testing.T) {
	root := testutil.PrivateDir(t)
	elsewhere := filepath.Join(root, "elsewhere")
	os.WriteFile(elsewhere, []byte("keep\n"), 0o600)
	dir := filepath.Join(root, "run")
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"daemon.lock", "daemon.log", "info.json"} {
		os.Symlink(elsewhere, filepath.Join(dir, name))
	}
	var ue *UnsafeError
	if _, err := d.Lock(); !errors.As(err, &ue) {
		t.Errorf("Lock through a link: %v", err)
	}
	if _, err := d.AppendLog("daemon.log"); !errors.As(err, &ue) {
		t.Errorf("AppendLog through a link: %v", err)
	}
	if _, err := d.ReadFile("info.json", 1<<10, "info file"); !errors.As(err, &ue) {
		t.Errorf("ReadFile through a link: %v", err)
	}
	if err := d.WriteFile("info.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(elsewhere); string(data) != "keep\n" {
		t.Errorf("WriteFile wrote through the link: %q", data)
	}
	if data, err := d.ReadFile("info.json", 1<<10, "info file"); err != nil || string(data) != "{}" {
		t.Errorf("ReadFile after WriteFile: %q %v", data, err)
	}
	os.Symlink(elsewhere, filepath.Join(dir, "api.sock"))
	l, err := d.Listen("api.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !strings.HasPrefix(l.Addr().String(), "/proc/self/fd/") {
		t.Errorf("bound at %s, not through the folder's descriptor", l.Addr())
	}
	fi, err := os.Lstat(filepath.Join(dir, "api.sock"))
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v %v", fi, err)
	}
	c, err := net.Dial("unix", filepath.Join(dir, "api.sock"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if data, _ := os.ReadFile(elsewhere); string(data) != "keep\n" {
		t.Errorf("the link's target changed: %q", data)
	}
}
