package netproxy

import (
	"fmt"
	"net"
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

// socketIn opens the socket file name in the session's directory without
// following a symlink, and returns a path that leads to that very inode
// (the handle's /proc/self/fd link) and a func that closes the handle.
// The directory is the sandbox user's: whatever the sandboxed code puts
// there, a symlink to another socket or a file, the engine must not
// connect to or chmod anything else through it.
func (s *session) socketIn(name string) (string, func(), error) {
	s.dirMu.RLock()
	fd, err := unix.Openat(int(s.dir.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	s.dirMu.RUnlock()
	if err != nil {
		return "", nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return "", nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return "", nil, fmt.Errorf("%s in the sandbox's network directory is not a socket", name)
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), func() { unix.Close(fd) }, nil
}

// dialIn connects to the socket file name in the session's directory
// (see socketIn).
func (s *session) dialIn(name string) (net.Conn, error) {
	path, done, err := s.socketIn(name)
	if err != nil {
		return nil, err
	}
	defer done()
	return net.Dial("unix", path)
}

// chmodIn sets the mode of the socket file name in the session's
// directory (see socketIn).
func (s *session) chmodIn(name string, mode os.FileMode) error {
	path, done, err := s.socketIn(name)
	if err != nil {
		return err
	}
	defer done()
	return os.Chmod(path, mode)
}
