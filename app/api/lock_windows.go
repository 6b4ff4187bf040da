package api

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

var errLocked = errors.New("locked")

// lockRuntime takes the per-user daemon lock: an exclusively created file.
func lockRuntime(dir string) (func(), error) {
	path := filepath.Join(dir, "daemon.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		if os.IsExist(err) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("taking the daemon lock: %w", err)
	}
	return func() { f.Close(); os.Remove(path) }, nil
}
