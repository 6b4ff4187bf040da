package pkgcache

import (
	"io/fs"
	"os"
	"path/filepath"
)

// openDir opens the directory path.
func openDir(path string) (*os.File, error) { return os.Open(path) }

// Empty removes everything in the open directory dir and leaves it.
func Empty(dir *os.File) error {
	entries, err := os.ReadDir(dir.Name())
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir.Name(), e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Usage counts the bytes and files under the open directory dir.
func Usage(dir *os.File) (bytes, files int64) {
	_ = filepath.WalkDir(dir.Name(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir.Name() {
			return nil
		}
		files++
		if fi, err := d.Info(); err == nil {
			bytes += fi.Size()
		}
		return nil
	})
	return bytes, files
}

// OpenDirFlags open a cache folder.
const OpenDirFlags = os.O_RDONLY
