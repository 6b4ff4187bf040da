package jailfs

import (
	"encoding/binary"
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// Children lists the directory name by its entries' names and kinds as
// the directory records them (d_type), without a stat of each: a walk
// of a large tree costs a listing per directory. Only on a file system
// that does not record kinds is an entry looked at, by the directory's
// descriptor. Past max entries it stops with ErrTooMany.
func (d *Dir) Children(name string, max int) ([]Child, error) {
	fd, err := openBeneath(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	defer unix.Close(fd)
	var out []Child
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		// struct linux_dirent64: ino (8), off (8), reclen (2), type (1),
		// the name, NUL-terminated.
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				break
			}
			typ, raw := buf[off+18], buf[off+19:off+reclen]
			off += reclen
			for i, b := range raw {
				if b == 0 {
					raw = raw[:i]
					break
				}
			}
			c := Child{Name: string(raw)}
			if c.Name == "." || c.Name == ".." || c.Name == "" {
				continue
			}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, c.Name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue // gone meanwhile
				}
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFDIR:
					typ = unix.DT_DIR
				case unix.S_IFLNK:
					typ = unix.DT_LNK
				}
			}
			c.Dir, c.Link = typ == unix.DT_DIR, typ == unix.DT_LNK
			if len(out) == max {
				return out, &fs.PathError{Op: "readdir", Path: name, Err: ErrTooMany}
			}
			out = append(out, c)
		}
	}
}
