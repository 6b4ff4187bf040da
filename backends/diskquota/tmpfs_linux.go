package diskquota

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Tmpfs gives the empty directory dir a hard quota of sizeMB MiB and as
// many files as Inodes allows, for a workspace that lives for one run (a
// one-shot's): a tmpfs mounted over it (nosuid, nodev), with dir's owner
// and mode at its root. It costs microseconds where an image costs the
// making of a filesystem; its pages are memory, counted in the memory
// limit of the processes that write them (the run's cgroup). Root only.
func Tmpfs(dir string, sizeMB int) error {
	if os.Geteuid() != 0 {
		return errors.New("the engine does not run as root, and only root may mount a tmpfs")
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("the workspace %s is not a directory", dir)
	}
	if !emptyDir(dir) {
		return fmt.Errorf("the workspace %s is not empty", dir)
	}
	uid, gid := ownerOf(fi)
	opts := fmt.Sprintf("size=%dm,nr_inodes=%d,mode=%o,uid=%d,gid=%d", sizeMB, Inodes(sizeMB), fi.Mode().Perm(), uid, gid)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting the workspace's tmpfs: %w", err)
	}
	return nil
}

// Unmount unmounts whatever is mounted at dir (an image, a tmpfs, a bind
// of one of them), all of it.
func Unmount(dir string) error { return unmountAll(dir) }

// Move moves what directory src holds into directory dst (another
// filesystem), without following any link; see moveTree.
func Move(src, dst string) error { return moveTree(src, dst) }

// Bind mounts directory src over directory dst (nosuid, nodev): a
// workspace made ahead of its run (Docker's pool) takes the run's
// workspace path.
func Bind(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding %s over %s: %w", src, dst, err)
	}
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		_ = unix.Unmount(dst, unix.MNT_DETACH)
		return fmt.Errorf("binding %s over %s: %w", src, dst, err)
	}
	return nil
}
