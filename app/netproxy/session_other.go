//go:build !linux

package netproxy

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// openDir opens dir. Outside Linux there is no /proc/self/fd to shorten
// socket paths through; the directory's own path is used.
func openDir(dir string) (*os.File, error) { return os.Open(dir) }

// at is a path inside the session's directory.
func (s *session) at(name string) string { return filepath.Join(s.dir.Name(), name) }

// dialIn connects to the socket file name in the session's directory,
// after checking that it is a socket and not a symlink. (Outside Linux
// the sandboxes have no network plumbing of their own; this keeps the
// package whole.)
func (s *session) dialIn(name string) (net.Conn, error) {
	if err := isSocket(s.at(name)); err != nil {
		return nil, err
	}
	return net.Dial("unix", s.at(name))
}

// chmodIn sets the mode of the socket file name (see dialIn).
func (s *session) chmodIn(name string, mode os.FileMode) error {
	if err := isSocket(s.at(name)); err != nil {
		return err
	}
	return os.Chmod(s.at(name), mode)
}

func isSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s is not a socket", path)
	}
	return nil
}
