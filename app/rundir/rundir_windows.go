package rundir

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
)

// Dir is a runtime dir. On Windows the folder lives in the user's own
// profile (%LOCALAPPDATA%'s temp), which other users cannot enter; its
// files are reached by path.
type Dir struct {
	Path string
}

// Open makes the runtime dir at path (mode bits mean little here).
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("making the runtime dir %s: %w", path, err)
	}
	return &Dir{Path: path}, nil
}

// Check opens the runtime dir at path for a client, without making it.
func Check(path string) (*Dir, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &UnsafeError{Path: path, What: "runtime dir", NotDir: true, Mode: fi.Mode()}
	}
	return &Dir{Path: path}, nil
}

// Close does nothing: no descriptor is held.
func (d *Dir) Close() error { return nil }

// ReadFile reads name, at most max bytes.
func (d *Dir) ReadFile(name string, max int64, _ string) ([]byte, error) {
	f, err := os.Open(filepath.Join(d.Path, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("%s is larger than %d bytes", f.Name(), max)
	}
	return data, err
}

// WriteFile replaces name with data through a temporary file.
func (d *Dir) WriteFile(name string, data []byte) error {
	tmp := filepath.Join(d.Path, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(d.Path, name))
}

// Create makes name exclusively.
func (d *Dir) Create(name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(d.Path, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

// AppendLog opens name for appending.
func (d *Dir) AppendLog(name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(d.Path, name), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
}

// Rename renames old to name in the folder, replacing what name was.
func (d *Dir) Rename(old, name string) error {
	return os.Rename(filepath.Join(d.Path, old), filepath.Join(d.Path, name))
}

// Remove removes name; one that is not there is no error.
func (d *Dir) Remove(name string) error {
	if err := os.Remove(filepath.Join(d.Path, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Lock takes the daemon lock: an exclusively created file.
func (d *Dir) Lock() (func(), error) {
	path := filepath.Join(d.Path, "daemon.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		if os.IsExist(err) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("taking the daemon lock: %w", err)
	}
	return func() { f.Close(); os.Remove(path) }, nil
}

// Listen binds the Unix socket name in the folder.
func (d *Dir) Listen(name string) (*net.UnixListener, error) {
	path := filepath.Join(d.Path, name)
	_ = os.Remove(path)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false)
	return l, nil
}

// Held says whether a daemon holds the lock now (its file is there).
func (d *Dir) Held() bool {
	_, err := os.Stat(filepath.Join(d.Path, "daemon.lock"))
	return err == nil
}
