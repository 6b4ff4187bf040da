//go:build unix

package app

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/app/sandboxuid"
)

// accountFiles sums up the system's account files (their inode, size and
// modification time; useradd replaces them by rename, a new inode): when
// it differs, they are read again. It is asked at every run: the files
// are looked at with stat(2) into one Stat_t, which os.Stat would turn
// into a FileInfo each, and the sum is written into one buffer.
func accountFiles(sys sandboxuid.System) string {
	b := make([]byte, 0, 4*64)
	var st unix.Stat_t
	for _, p := range [...]string{sys.Passwd, sys.Group, sys.Subuid, sys.Subgid} {
		err := unix.Stat(p, &st)
		for err == unix.EINTR {
			err = unix.Stat(p, &st)
		}
		if err != nil {
			b = append(b, "-;"...)
			continue
		}
		b = strconv.AppendUint(b, uint64(st.Ino), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, st.Size, 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, st.Mtim.Nano(), 10)
		b = append(b, ';')
	}
	return string(b)
}
