//go:build unix

package diskquota

import (
	"io/fs"
	"syscall"
)

// allocatedBytes is the disk space a file really takes.
func allocatedBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
