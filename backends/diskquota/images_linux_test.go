package diskquota

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// requireImages skips without root (images are a root engine's), and
// fails under CI=true when root cannot make one.
func requireImages(t *testing.T) *Images {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("filesystem images need root")
	}
	im := NewImages(filepath.Join(testutil.SandboxDir(t, "senclaw-disks-"), "disks"), nil)
	if ok, why := im.Usable(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a root engine must be able to make workspace images under CI: %s", why)
		}
		t.Skip(why)
	}
	return im
}

// workspace is an empty directory like the engine's, owned by nobody.
func workspace(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(testutil.SandboxDir(t, "senclaw-ws-"), "w")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return ws
}

// asNobody runs a shell script in dir as uid 65534 and returns its
// output, whatever its exit code.
func asNobody(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func used(t *testing.T, dir string) (bytes, files int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, int64(st.Files - st.Ffree)
}

// TestAnImageIsAHardQuota: a 16 MB workspace image refuses, with ENOSPC,
// the 150,000 empty files that the old byte count let through, a burst
// of three times the quota in one write, and keeps an open unlinked file
// counted; its root is the workspace's (owner, mode, no lost+found).
func TestAnImageIsAHardQuota(t *testing.T) {
	t.Parallel()
	im := requireImages(t)
	ws := workspace(t)
	size, err := im.Attach(ws, 16)
	if err != nil || size != 16 {
		t.Fatalf("attach: %d %v", size, err)
	}
	t.Cleanup(func() { _ = im.Remove(ws, false) })
	if !Mounted(ws) {
		t.Fatal("the image is not mounted over the workspace")
	}
	fi, _ := os.Stat(ws)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the workspace's root is %d, mode %o", st.Uid, fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Fatalf("a fresh image shows %v", entries)
	}

	t.Run("files", func(t *testing.T) {
		out := asNobody(t, ws, `mkdir many && cd many && i=0; while [ $i -lt 150000 ]; do true 2>/dev/null > f$i || { echo "stopped at $i"; break; }; i=$((i+1)); done; cd .. && rm -r many`)
		if !strings.Contains(out, "stopped at ") {
			t.Fatalf("150,000 files fit a 16 MB image: %q", out)
		}
		var n int
		fmt.Sscanf(strings.TrimPrefix(strings.TrimSpace(out), "stopped at "), "%d", &n)
		if n > int(Inodes(16)) {
			t.Fatalf("%d files fit, more than the %d inodes of the quota", n, Inodes(16))
		}
	})
	t.Run("burst", func(t *testing.T) {
		out := asNobody(t, ws, `dd if=/dev/zero of=big bs=48M count=1 2>&1; ls -s big; rm -f big`)
		if !strings.Contains(out, "No space left on device") {
			t.Fatalf("48 MB in one write into a 16 MB image: %q", out)
		}
	})
	t.Run("unlinked", func(t *testing.T) {
		before, _ := used(t, ws)
		out := asNobody(t, ws, `exec 3>held; rm held; dd if=/dev/zero bs=1M count=8 >&3 2>/dev/null; dd if=/dev/zero of=more bs=1M count=12 2>&1; rm -f more`)
		if !strings.Contains(out, "No space left on device") {
			t.Fatalf("8 MB held open and unlinked, then 12 MB more, fit a 16 MB image: %q", out)
		}
		if after, _ := used(t, ws); after > before+1<<20 {
			t.Fatalf("%d bytes still used after the holder exited", after-before)
		}
	})
}

// TestImageFilesMoveInAndOut: what the workspace held before its image
// (the file API writes before the first run) moves into it; a workspace
// that does not fit is refused and left as it was; deleting a sandbox
// but keeping its files moves them back out; no setuid bit survives a
// move and no link is followed.
func TestImageFilesMoveInAndOut(t *testing.T) {
	t.Parallel()
	im := requireImages(t)
	ws := workspace(t)
	asNobody(t, ws, `mkdir -p src/deep && echo hello > src/deep/a.txt && ln -s /etc/shadow link && cp /bin/true tool && chmod 4755 tool`)
	if _, err := im.Attach(ws, 16); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = im.Remove(ws, false) })
	if !Mounted(ws) {
		t.Fatal("not mounted")
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "src/deep/a.txt")); string(data) != "hello\n" {
		t.Fatalf("the file moved in reads %q", data)
	}
	if target, err := os.Readlink(filepath.Join(ws, "link")); err != nil || target != "/etc/shadow" {
		t.Fatalf("the link moved in: %q %v", target, err)
	}
	if fi, _ := os.Stat(filepath.Join(ws, "tool")); fi.Mode()&os.ModeSetuid != 0 {
		t.Fatal("a setuid bit moved in")
	}
	if err := im.Remove(ws, true); err != nil {
		t.Fatal(err)
	}
	if Mounted(ws) {
		t.Fatal("still mounted after Remove")
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "src/deep/a.txt")); string(data) != "hello\n" {
		t.Fatalf("the file kept after Remove reads %q", data)
	}
	if _, err := os.Stat(im.path(ws)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the image is still there: %v", err)
	}

	big := workspace(t)
	asNobody(t, big, `dd if=/dev/zero of=blob bs=1M count=20 2>/dev/null`)
	_, err := im.Attach(big, 16)
	t.Cleanup(func() { _ = im.Remove(big, false) })
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("20 MB into a 16 MB image: %v", err)
	}
	if Mounted(big) {
		t.Fatal("mounted although it did not fit")
	}
	if fi, err := os.Stat(filepath.Join(big, "blob")); err != nil || fi.Size() != 20<<20 {
		t.Fatalf("the workspace that did not fit changed: %v", err)
	}
}

// TestImagesAreReconciled: at start, a mount a crashed engine left over a
// known workspace is kept, one over a workspace no sandbox owns is
// removed with its image, and an image of a known workspace that is not
// mounted is mounted again with its files.
func TestImagesAreReconciled(t *testing.T) {
	t.Parallel()
	im := requireImages(t)
	root := filepath.Join(testutil.SandboxDir(t, "senclaw-ws-"), "workspaces")
	os.Mkdir(root, 0o711)
	mk := func(name string) string {
		ws := filepath.Join(root, name)
		os.Mkdir(ws, 0o700)
		if _, err := im.Attach(ws, 16); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = im.Remove(ws, false) })
		return ws
	}
	kept, gone, later := mk("kept"), mk("gone"), mk("later")
	os.WriteFile(filepath.Join(later, "note"), []byte("still here"), 0o600)
	if err := im.Detach(later); err != nil {
		t.Fatal(err)
	}
	known := func(ws string) bool { return ws == kept || ws == later }
	if err := im.Reconcile([]string{root}, known); err != nil {
		t.Fatal(err)
	}
	if !Mounted(kept) || !Mounted(later) {
		t.Fatalf("known workspaces: kept mounted %v, later mounted %v", Mounted(kept), Mounted(later))
	}
	if data, _ := os.ReadFile(filepath.Join(later, "note")); string(data) != "still here" {
		t.Fatalf("the remounted image reads %q", data)
	}
	if Mounted(gone) || hasImage(im.path(gone)) {
		t.Fatal("the mount and image of a workspace no sandbox owns are still there")
	}
	if err := im.DetachAll(); err != nil {
		t.Fatal(err)
	}
	if Mounted(kept) || Mounted(later) {
		t.Fatal("DetachAll left mounts")
	}
}
