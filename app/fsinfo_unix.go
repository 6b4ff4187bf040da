//go:build unix

package app

import (
	"io/fs"
	"syscall"
)

// ownerOf returns a file's owner and group.
func ownerOf(info fs.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
