package jailfs

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// tree is a jail with a file and a folder, and an outside folder with a
// secret, and links from inside to outside.
func tree(t *testing.T) (jail, outside string) {
	t.Helper()
	base := t.TempDir()
	jail, outside = filepath.Join(base, "jail"), filepath.Join(base, "outside")
	for _, d := range []string{jail, outside, filepath.Join(jail, "sub"), filepath.Join(jail, "sub", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(jail, "file"), "inside")
	write(filepath.Join(jail, "sub", "deep", "file"), "deep")
	write(filepath.Join(outside, "secret"), "secret")
	for link, target := range map[string]string{
		"abs":      outside,
		"rel":      "../outside",
		"inner":    "sub",  // stays inside, still not followed
		"filelink": "file", // a link to a file inside
		"sub/up":   "../../outside",
	} {
		if err := os.Symlink(target, filepath.Join(jail, link)); err != nil {
			t.Fatal(err)
		}
	}
	return jail, outside
}

// openJail opens dir as a Dir, closed at the end of the test.
func openJail(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Both ways of resolving (openat2, and the walk for kernels without it)
// follow no link and never leave the jail.
func TestOpenFollowsNoLink(t *testing.T) {
	t.Parallel()
	jail, _ := tree(t)
	d := openJail(t, jail)
	for _, open := range []struct {
		name string
		fn   func(dirfd int, name string, flags int, mode uint32) (int, error)
	}{{"openat2", openBeneath}, {"walk", walkBeneath}} {
		for _, name := range []string{"abs/secret", "rel/secret", "inner/deep/file", "filelink", "sub/up/secret", "abs", "sub/up"} {
			fd, err := open.fn(d.fd, name, syscall.O_RDONLY, 0)
			if err == nil {
				syscall.Close(fd)
				t.Errorf("%s: %s opened", open.name, name)
			} else if !errors.Is(err, ErrLink) {
				t.Errorf("%s: %s: %v, want ErrLink", open.name, name, err)
			}
		}
		for _, name := range []string{"../outside/secret", "/etc/passwd", "sub/../file", "./file"} {
			if fd, err := open.fn(d.fd, name, syscall.O_RDONLY, 0); err == nil {
				syscall.Close(fd)
				t.Errorf("%s: %s opened", open.name, name)
			}
		}
		for _, name := range []string{"file", "sub/deep/file", ".", "sub"} {
			fd, err := open.fn(d.fd, name, syscall.O_RDONLY, 0)
			if err != nil {
				t.Errorf("%s: %s: %v", open.name, name, err)
				continue
			}
			syscall.Close(fd)
		}
	}
}

// The jail's own path may not go through a link either.
func TestOpenDirRefusesALinkInItsPath(t *testing.T) {
	t.Parallel()
	jail, outside := tree(t)
	if _, err := OpenDir(filepath.Join(jail, "abs")); !errors.Is(err, ErrLink) {
		t.Errorf("a jail that is a link: %v", err)
	}
	if _, err := OpenDir(filepath.Join(jail, "sub", "up")); !errors.Is(err, ErrLink) {
		t.Errorf("a jail under a link: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Dir(outside), link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(filepath.Join(link, "jail")); !errors.Is(err, ErrLink) {
		t.Errorf("a jail whose parent is a link: %v", err)
	}
	if _, err := OpenDir("relative"); err == nil {
		t.Error("a relative jail was opened")
	}
}

// Listing, making and removing stay inside and remove links, not what
// they lead to.
func TestDirOperationsStayInside(t *testing.T) {
	t.Parallel()
	jail, outside := tree(t)
	d := openJail(t, jail)
	if _, err := d.ReadDir("abs"); !errors.Is(err, ErrLink) {
		t.Errorf("listing a link: %v", err)
	}
	list, err := d.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for _, e := range list {
		if e.Mode&fs.ModeSymlink != 0 {
			links[e.Name] = e.Link
		}
	}
	if links["abs"] != outside || links["rel"] != "../outside" || len(links) != 4 {
		t.Errorf("links %v", links)
	}
	if err := d.MkdirAll("abs/made", 0o755); !errors.Is(err, ErrLink) {
		t.Errorf("mkdir through a link: %v", err)
	}
	if err := d.MkdirAll("new/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	if f, err := d.Open("abs/new", os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
		f.Close()
		t.Error("create through a link")
	}
	if f, err := d.Open("filelink", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err == nil {
		f.Close()
		t.Error("create over a link")
	}
	// Rename goes through no link on either side, and replaces a link at
	// its destination rather than writing where it leads.
	if err := os.WriteFile(filepath.Join(jail, "new", "moved"), []byte("moved"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Rename("new/moved", "abs/moved"); !errors.Is(err, ErrLink) {
		t.Errorf("rename into a link: %v", err)
	}
	if err := d.Rename("inner/deep/file", "new/x"); !errors.Is(err, ErrLink) {
		t.Errorf("rename out of a link: %v", err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(jail, "new", "over")); err != nil {
		t.Fatal(err)
	}
	if err := d.Rename("new/moved", "new/over"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(jail, "new", "over")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link renamed over: %v %v", fi, err)
	}
	if err := d.RemoveAll("sub"); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveAll("abs"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(data) != "secret" {
		t.Fatalf("outside after removals: %q %v", data, err)
	}
	for _, gone := range []string{"sub", "abs"} {
		if _, err := os.Lstat(filepath.Join(jail, gone)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", gone, err)
		}
	}
	if err := d.RemoveAll("."); err == nil {
		t.Error("removed the jail itself")
	}
}

// A folder swapped for a link to outside, over and over while the engine
// works in it, never lets a read reach outside.
func TestSwapsWhileReadingNeverLeadOutside(t *testing.T) {
	t.Parallel()
	jail, outside := tree(t)
	d := openJail(t, jail)
	dir, tmp := filepath.Join(jail, "swap"), filepath.Join(jail, "swap.tmp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "secret"), []byte("inside"), 0o644)
	if err := os.Symlink(outside, tmp+".link"); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.Rename(dir, tmp)
			os.Rename(tmp+".link", dir)
			os.Rename(dir, tmp+".link")
			os.Rename(tmp, dir)
		}
	}()
	for range 3000 {
		f, err := d.Open("swap/secret", os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		buf := make([]byte, 16)
		n, _ := f.Read(buf)
		f.Close()
		if string(buf[:n]) == "secret" {
			t.Fatal("a read through the swapped link reached outside")
		}
	}
	stop.Store(true)
	wg.Wait()
}

// As gives one thread the sandbox user's rights, and only that thread:
// files it makes are the user's, it cannot read what the user cannot, and
// the engine's other goroutines keep their rights throughout.
func TestAsTheSandboxUser(t *testing.T) {
	if os.Geteuid() != 0 {
		if err := As(nil, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		t.Skip("changing credentials needs a root engine")
	}
	t.Parallel()
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	private := filepath.Join(dir, "private")
	os.WriteFile(private, []byte("root"), 0o600)
	d := openJail(t, dir)
	user := &backends.Credential{UID: 65534, GID: 65534}
	var stop atomic.Bool
	var others sync.WaitGroup
	var otherDenied atomic.Int32
	for range 4 {
		others.Add(1)
		go func() {
			defer others.Done()
			for !stop.Load() {
				if _, err := os.ReadFile(private); err != nil {
					otherDenied.Add(1)
				}
			}
		}()
	}
	for i := range 200 {
		err := As(user, func() error {
			if f, err := d.Open("private", os.O_RDONLY, 0); err == nil {
				f.Close()
				return errors.New("read root's 0600 file as the sandbox user")
			}
			if i == 0 {
				f, err := d.Open("made", os.O_WRONLY|os.O_CREATE, 0o644)
				if err != nil {
					return err
				}
				return f.Close()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	others.Wait()
	if n := otherDenied.Load(); n > 0 {
		t.Fatalf("the engine's other goroutines were denied %d times: the credentials leaked out of As", n)
	}
	fi, err := os.Stat(filepath.Join(dir, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
		t.Errorf("made as %d:%d", st.Uid, st.Gid)
	}
	if err := As(&backends.Credential{UID: 0, GID: 0}, func() error { return nil }); err == nil {
		t.Error("As root was allowed")
	}
	// A panic in the work restores the thread too.
	func() {
		defer func() { _ = recover() }()
		_ = As(user, func() error { panic("in the work") })
	}()
	for range 50 {
		if _, err := os.ReadFile(private); err != nil {
			t.Fatalf("after a panic in As, the engine is denied: %v", err)
		}
	}
}

// As never ends a thread: a thread that ends kills, by their death
// signal, the children it forked (bwrap and strace are started with one),
// and Go runs any goroutine on any thread: right after a goroutine forks,
// the next As is likely to run on the same thread.
func TestAsKeepsChildrenOfItsThreadAlive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing credentials needs a root engine")
	}
	t.Parallel()
	user := &backends.Credential{UID: 65534, GID: 65534}
	var mu sync.Mutex
	var children []*exec.Cmd
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("/bin/sleep", "60")
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			children = append(children, cmd)
			mu.Unlock()
			for range 20 {
				_ = As(user, func() error { return nil })
			}
		}()
	}
	wg.Wait()
	dead := 0
	for _, c := range children {
		// A killed child is a zombie until it is waited for.
		var ws syscall.WaitStatus
		if pid, _ := syscall.Wait4(c.Process.Pid, &ws, syscall.WNOHANG, nil); pid == c.Process.Pid {
			dead++
			continue
		}
		c.Process.Kill()
		c.Wait()
	}
	if dead > 0 {
		t.Fatalf("%d of %d children started with a death signal are gone: a thread ended", dead, len(children))
	}
}

// TestDirDescriptorsAreNeverInherited: the descriptors a walk holds are
// close-on-exec from the instant they exist. A dup made without it was,
// while MkdirAll (or a walk without openat2) went down the folders,
// inherited by whatever the engine started at the same time (another
// sandbox's bwrap, which keeps what it inherits): a directory of this
// machine outside that sandbox's view, a way out of it.
func TestDirDescriptorsAreNeverInherited(t *testing.T) {
	base := t.TempDir()
	d, err := OpenDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if err := d.MkdirAll("a/b/c/d", 0o755); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		out, err := exec.Command("/bin/sh", "-c", `ls -l /proc/$$/fd`).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if strings.Contains(string(out), base) {
			t.Fatalf("a process started during a walk inherited its descriptor (start %d):\n%s", i, out)
		}
	}
}
