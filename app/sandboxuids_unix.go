//go:build unix

package app

import (
	"os"
	"strconv"
	"syscall"

	"github.com/senclaw/sandbox/app/sandboxuid"
)

// accountFiles sums up the system's account files (their inode, size and
// modification time; useradd replaces them by rename, a new inode): when
// it differs, they are read again.
func accountFiles(sys sandboxuid.System) string {
	// Read at every run: one buffer, no formatting of boxed numbers.
	b := make([]byte, 0, 4*64)
	for _, p := range [...]string{sys.Passwd, sys.Group, sys.Subuid, sys.Subgid} {
		if fi, err := os.Stat(p); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				b = strconv.AppendUint(b, uint64(st.Ino), 10)
				b = append(b, ':')
				b = strconv.AppendInt(b, st.Size, 10)
				b = append(b, ':')
				b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 10)
				b = append(b, ';')
				continue
			}
		}
		b = append(b, "-;"...)
	}
	return string(b)
}
