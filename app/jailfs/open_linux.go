package jailfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// pathFlag opens a directory only to walk through it.
const pathFlag = unix.O_PATH

// openBeneath opens name beneath dirfd without following any link and
// without leaving dirfd: one openat2 (Linux 5.6) where the kernel has it,
// a walk of openat calls otherwise.
func openBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	if _, err := components(name); err != nil {
		return -1, err
	}
	how := &unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(mode)
	}
	for range 8 {
		fd, err := unix.Openat2(dirfd, name, how)
		switch {
		case errors.Is(err, unix.ENOSYS):
			return walkBeneath(dirfd, name, flags, mode)
		case errors.Is(err, unix.EAGAIN):
			continue // a rename raced the lookup: try again
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
			return -1, ErrLink
		case errors.Is(err, unix.ENOTDIR):
			// A link where a directory should be says ENOTDIR too: the
			// walk tells the two apart (and fails the same way).
			return walkBeneath(dirfd, name, flags, mode)
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}
