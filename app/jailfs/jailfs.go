// Package jailfs touches files on a sandbox's behalf, never doing more than
// its code could.
//
// The engine's file API goes through it.
//
// A Dir is a directory the engine checked (a workspace, a mount source),
// opened without following any symbolic link on its path. Every name
// under it is resolved beneath it, component by component, by descriptor
// (openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel has
// it), never following a link: sandboxed code can plant links and swap
// directories for them while the engine works, and a link it planted must
// not take the engine anywhere, even inside the sandbox's own tree
// (where the sandbox's view, with its mounts, differs from the host's).
//
// As runs the work with the sandbox user's filesystem credentials (a root
// engine's sandboxes run as an unprivileged user): what that user may not
// read, write or delete, the file API may not either.
package jailfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// Entry is one entry of a directory listing.
type Entry struct {
	Name    string
	Mode    fs.FileMode
	Size    int64
	ModTime time.Time
	// Link is a symbolic link's target ("" for anything else).
	Link string
	// Inode and Device say which file it is (0 where the system does not
	// tell).
	Inode, Device uint64
}

// Child is a directory entry as Children lists it: its name and kind.
type Child struct {
	Name string
	// Dir and Link say that it is a directory, or a symbolic link.
	Dir, Link bool
}

// ErrLink is returned for a name that goes through a symbolic link (or
// would leave its Dir): such names are refused, not followed.
var ErrLink = errors.New("goes through a symbolic link")

// ErrTooMany is returned by Children for a directory with more entries
// than asked for.
var ErrTooMany = errors.New("has more entries than allowed")

// ErrNotRegular is returned by OpenRegular for anything but a regular
// file (a FIFO, a device, a socket, a directory).
var ErrNotRegular = errors.New("is not a regular file")

// ErrUnsupported is returned by As where the credentials of one thread
// cannot be changed (anything but Linux).
var ErrUnsupported = errors.New("acting as another user needs Linux")

// components splits a relative, clean name into its parts; "." is none.
// A name that is absolute, unclean or holds ".." is refused: callers
// clean names first, so such a name is a bug or an attack.
func components(name string) ([]string, error) {
	if name == "." || name == "" {
		return nil, nil
	}
	if path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") || strings.ContainsRune(name, 0) {
		return nil, &fs.PathError{Op: "resolve", Path: name, Err: fs.ErrInvalid}
	}
	return strings.Split(name, "/"), nil
}

// split is name's parent and last component ("." and name for a name of
// one component).
func split(name string) (string, string) {
	dir, base := path.Split(name)
	if dir == "" {
		return ".", base
	}
	return strings.TrimSuffix(dir, "/"), base
}

// OpenRegular opens name beneath d for reading: a regular file only
// (ErrNotRegular otherwise), opened without waiting, so that a FIFO
// planted where a file is read does not hang the engine.
func (d *Dir) OpenRegular(name string) (*os.File, error) {
	f, err := d.Open(name, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	return f, nil
}
