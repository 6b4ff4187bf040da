//go:build !linux

package netproxy

import (
	"os"
	"path/filepath"
)

// openDir opens dir. Outside Linux there is no /proc/self/fd to shorten
// socket paths through; the directory's own path is used.
func openDir(dir string) (*os.File, error) { return os.Open(dir) }

// at is a path inside the session's directory.
func (s *session) at(name string) string { return filepath.Join(s.dir.Name(), name) }
