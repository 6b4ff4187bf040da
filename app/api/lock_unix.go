//go:build unix

package api

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

var errLocked = errors.New("locked")

// lockRuntime takes the per-user daemon lock, a flock on a file in the
// runtime dir: it is released by the kernel when the daemon dies, so a
// crash never leaves a stale lock.
func lockRuntime(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "daemon.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the daemon lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("taking the daemon lock: %w", err)
	}
	return func() { f.Close() }, nil
}
