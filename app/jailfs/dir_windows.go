package jailfs

import (
	"io/fs"
	"os"
)

// nonBlock opens a FIFO without waiting for its other end.
const nonBlock = 0

// Dir is an open directory that names are resolved beneath. On Windows it
// is an os.Root: names cannot leave it, but links that stay inside it are
// followed (there is no openat2 to refuse them).
type Dir struct {
	root *os.Root
}

// OpenDir opens the directory path.
func OpenDir(path string) (*Dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Open opens name beneath d.
func (d *Dir) Open(name string, flags int, perm fs.FileMode) (*os.File, error) {
	if _, err := components(name); err != nil {
		return nil, err
	}
	return d.root.OpenFile(name, flags, perm)
}

// Lstat describes name itself.
func (d *Dir) Lstat(name string) (Entry, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return Entry{}, err
	}
	return d.entry(name, fi), nil
}

// ReadDir lists the directory name.
func (d *Dir) ReadDir(name string) ([]Entry, error) {
	f, err := d.Open(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(des))
	for _, de := range des {
		child := de.Name()
		if name != "." {
			child = name + "/" + child
		}
		if fi, err := d.root.Lstat(child); err == nil {
			out = append(out, d.entry(child, fi))
		}
	}
	return out, nil
}

func (d *Dir) entry(name string, fi fs.FileInfo) Entry {
	e := Entry{Name: fi.Name(), Mode: fi.Mode(), Size: fi.Size(), ModTime: fi.ModTime()}
	if fi.Mode()&fs.ModeSymlink != 0 {
		e.Link, _ = d.root.Readlink(name)
	}
	return e
}

// MkdirAll makes the directory name and its missing parents.
func (d *Dir) MkdirAll(name string, perm fs.FileMode) error {
	if _, err := components(name); err != nil {
		return err
	}
	return d.root.MkdirAll(name, perm)
}

// Mkdir makes the directory name, whose parent must exist.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	if _, err := components(name); err != nil || name == "." {
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrInvalid}
	}
	return d.root.Mkdir(name, perm)
}

// RemoveEmpty removes name if it is an empty directory.
func (d *Dir) RemoveEmpty(name string) error {
	if _, err := components(name); err != nil || name == "." {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrInvalid}
	}
	fi, err := d.root.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrInvalid}
	}
	return d.root.Remove(name)
}

// RemoveAll removes name and everything in it.
func (d *Dir) RemoveAll(name string) error {
	if _, err := components(name); err != nil || name == "." {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrInvalid}
	}
	return d.root.RemoveAll(name)
}

// Rename moves the entry oldName to newName, both beneath d.
func (d *Dir) Rename(oldName, newName string) error {
	for _, n := range []string{oldName, newName} {
		if _, err := components(n); err != nil || n == "." {
			return &fs.PathError{Op: "rename", Path: n, Err: fs.ErrInvalid}
		}
	}
	return d.root.Rename(oldName, newName)
}
