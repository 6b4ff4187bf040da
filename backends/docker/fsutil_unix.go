//go:build unix

package docker

import (
	"os"
	"syscall"
)

// ownerOf is fi's uid and gid.
func ownerOf(fi os.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// replaceDir renames dir onto target, which must be an empty directory:
// rename(2) swaps them atomically (os.Rename refuses an existing target).
func replaceDir(dir, target string) error {
	if err := syscall.Rename(dir, target); err != nil {
		return &os.LinkError{Op: "rename", Old: dir, New: target, Err: err}
	}
	return nil
}
