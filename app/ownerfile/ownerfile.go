// Package ownerfile reads and makes files that only their owner may read.
//
// The engine keeps its keys (the secrets' sealing key, its proxy's CA key)
// in the owner-only config dir. A file is read only if it is a regular
// file of this process's user that nobody else may read, opened without
// following a link; it is made exclusively with mode 0600 in a 0700
// folder, so that another user's file planted first is never taken.
package ownerfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// MaxBytes bounds what Read reads.
const MaxBytes = 1 << 20

// Read returns the contents of the owner-only file at path. A missing
// file is an error satisfying errors.Is(err, os.ErrNotExist).
func Read(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := checkPrivate(f); err != nil {
		return nil, fmt.Errorf("%s %v; nothing was read from it", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxBytes)
	}
	return b, nil
}

// Create writes data to a new owner-only file at path (mode 0600), making
// its folder (0700) as needed. If the file exists, ErrExist is returned
// and nothing is written.
func Create(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// ErrExist is Create's error for a file that is there already.
var ErrExist = os.ErrExist

// IsExist reports whether err is Create's for a file that exists.
func IsExist(err error) bool { return errors.Is(err, os.ErrExist) }
