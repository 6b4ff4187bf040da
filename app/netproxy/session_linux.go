package netproxy

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openDir opens dir as an O_PATH handle that paths can go through.
func openDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// at is a path inside the session's directory through the handle, short
// enough for a Unix socket address whatever the directory's real path.
func (s *session) at(name string) string {
	return "/proc/self/fd/" + strconv.Itoa(int(s.dir.Fd())) + "/" + name
}
