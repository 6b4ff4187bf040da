//go:build unix

package app

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/senclaw/sandbox/app/sandboxuid"
)

// accountFiles sums up the system's account files (their inode, size and
// modification time; useradd replaces them by rename, a new inode): when
// it differs, they are read again.
func accountFiles(sys sandboxuid.System) string {
	var b strings.Builder
	for _, p := range []string{sys.Passwd, sys.Group, sys.Subuid, sys.Subgid} {
		if fi, err := os.Stat(p); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				fmt.Fprintf(&b, "%d:%d:%d;", st.Ino, st.Size, fi.ModTime().UnixNano())
				continue
			}
		}
		b.WriteString("-;")
	}
	return b.String()
}
