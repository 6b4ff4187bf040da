//go:build unix

package jailfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// nonBlock opens a FIFO without waiting for its other end.
const nonBlock = unix.O_NONBLOCK

// Dir is an open directory that names are resolved beneath. Close it.
type Dir struct {
	fd   int
	path string
}

// OpenDir opens the directory path (absolute), refusing it (ErrLink)
// when any component of the path is a symbolic link: such paths are
// stored canonical, so a link in one was put there since it was checked.
func OpenDir(path string) (*Dir, error) {
	if len(path) == 0 || path[0] != '/' {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrInvalid}
	}
	root, err := unix.Open("/", pathFlag|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	defer unix.Close(root)
	rel := path[1:]
	if rel == "" {
		rel = "."
	}
	fd, err := openBeneath(root, rel, pathFlag|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, path: path}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Open opens name beneath d with flags (os.O_*) and, when it creates the
// file, perm. The file's Name is d's path joined with name (for messages
// and records: the file was not opened by it).
func (d *Dir) Open(name string, flags int, perm fs.FileMode) (*os.File, error) {
	fd, err := openBeneath(d.fd, name, flags, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), path.Join(d.path, name)), nil
}

// Lstat describes name itself (a link is not followed).
func (d *Dir) Lstat(name string) (Entry, error) {
	parent, base := split(name)
	if name == "." {
		var st unix.Stat_t
		if err := unix.Fstat(d.fd, &st); err != nil {
			return Entry{}, &fs.PathError{Op: "lstat", Path: name, Err: err}
		}
		return entryOf(".", &st), nil
	}
	pfd, err := openBeneath(d.fd, parent, pathFlag|unix.O_DIRECTORY, 0)
	if err != nil {
		return Entry{}, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	defer unix.Close(pfd)
	e, err := statAt(pfd, base)
	if err != nil {
		return Entry{}, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return e, nil
}

// ReadDir lists the directory name: each entry as it is (links with
// their targets, not followed).
func (d *Dir) ReadDir(name string) ([]Entry, error) {
	fd, err := openBeneath(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		// Each entry is looked at through the directory's descriptor, not
		// by a path that could be walked elsewhere meanwhile.
		if e, err := statAt(int(f.Fd()), n); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// MkdirAll makes the directory name and its missing parents, with perm.
func (d *Dir) MkdirAll(name string, perm fs.FileMode) error {
	parts, err := components(name)
	if err != nil {
		return err
	}
	cur, err := dupCloexec(d.fd)
	if err != nil {
		return err
	}
	defer func() { unix.Close(cur) }()
	for _, p := range parts {
		if err := unix.Mkdirat(cur, p, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			return &fs.PathError{Op: "mkdir", Path: name, Err: err}
		}
		next, err := stepInto(cur, p)
		if err != nil {
			return &fs.PathError{Op: "mkdir", Path: name, Err: err}
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// Mkdir makes the directory name, whose parent must exist, with perm
// (fs.ErrExist when something is there already, a link included).
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	return d.inParent("mkdir", name, func(pfd int, base string) error {
		return unix.Mkdirat(pfd, base, uint32(perm.Perm()))
	})
}

// RemoveEmpty removes name if it is an empty directory.
func (d *Dir) RemoveEmpty(name string) error {
	return d.inParent("remove", name, func(pfd int, base string) error {
		return unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
	})
}

// Rename moves the entry oldName to newName, both beneath d, replacing
// what is at newName (a link there is replaced, never followed).
func (d *Dir) Rename(oldName, newName string) error {
	var parents [2]int
	var bases [2]string
	for i, name := range []string{oldName, newName} {
		if _, err := components(name); err != nil || name == "." {
			return &fs.PathError{Op: "rename", Path: name, Err: fs.ErrInvalid}
		}
		parent, base := split(name)
		pfd, err := openBeneath(d.fd, parent, pathFlag|unix.O_DIRECTORY, 0)
		if err != nil {
			return &fs.PathError{Op: "rename", Path: name, Err: err}
		}
		defer unix.Close(pfd)
		parents[i], bases[i] = pfd, base
	}
	if err := unix.Renameat(parents[0], bases[0], parents[1], bases[1]); err != nil {
		return &fs.PathError{Op: "rename", Path: oldName, Err: err}
	}
	return nil
}

// inParent runs fn on the parent of name, opened beneath d, and its last
// component.
func (d *Dir) inParent(op, name string, fn func(pfd int, base string) error) error {
	if _, err := components(name); err != nil || name == "." {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	parent, base := split(name)
	pfd, err := openBeneath(d.fd, parent, pathFlag|unix.O_DIRECTORY, 0)
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer unix.Close(pfd)
	if err := fn(pfd, base); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// RemoveAll removes name and, for a directory, everything in it. Links
// are removed, never followed; a directory swapped for a link while it is
// emptied is not entered.
func (d *Dir) RemoveAll(name string) error {
	return d.inParent("remove", name, removeAt)
}

func removeAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	for range 3 {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), name)
		names, err := f.Readdirnames(-1)
		if err != nil && err != io.EOF {
			f.Close()
			return err
		}
		for _, n := range names {
			if err := removeAt(int(f.Fd()), n); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
		// Something may have been made in it meanwhile: empty it again.
		if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return unix.ENOTEMPTY
}

// stepInto opens the directory name in dirfd without following a link.
func stepInto(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, pathFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, ErrLink
		}
	}
	return fd, err
}

// dupCloexec duplicates fd close-on-exec from the start: a dup marked
// after it was made is, for that moment, inherited by whatever the
// engine starts at the same time (another sandbox's bwrap keeps it).
func dupCloexec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// walkBeneath is openBeneath one component at a time, for kernels
// without openat2.
func walkBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	parts, err := components(name)
	if err != nil {
		return -1, err
	}
	if len(parts) == 0 {
		parts = []string{"."}
	}
	cur, err := dupCloexec(dirfd)
	if err != nil {
		return -1, err
	}
	for _, p := range parts[:len(parts)-1] {
		next, err := stepInto(cur, p)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	defer unix.Close(cur)
	last := parts[len(parts)-1]
	fd, err := unix.Openat(cur, last, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if errors.Is(err, unix.ELOOP) || (errors.Is(err, unix.ENOTDIR) && flags&unix.O_DIRECTORY != 0) {
		var st unix.Stat_t
		if unix.Fstatat(cur, last, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, ErrLink
		}
	}
	return fd, err
}

// statAt describes name in dirfd, not following a link.
func statAt(dirfd int, name string) (Entry, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, err
	}
	e := entryOf(name, &st)
	if e.Mode&fs.ModeSymlink != 0 {
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(dirfd, name, buf); err == nil {
			e.Link = string(buf[:n])
		}
	}
	return e, nil
}

func entryOf(name string, st *unix.Stat_t) Entry {
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	sec, nsec := st.Mtim.Unix()
	return Entry{Name: name, Mode: mode, Size: st.Size, ModTime: time.Unix(sec, nsec), Inode: uint64(st.Ino), Device: uint64(st.Dev)}
}
