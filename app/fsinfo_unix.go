//go:build unix

package app

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownerOf returns a file's owner and group.
func ownerOf(info fs.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}

// DiskFree is the space an unprivileged user may still take on the
// filesystem of dir.
func DiskFree(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// identityOf returns which file info is: its inode and device.
func identityOf(info fs.FileInfo) (ino, dev uint64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Ino), uint64(st.Dev)
}
