//go:build unix

package pkgcache

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// openDir opens the directory path itself, not a link there.
func openDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Empty removes everything in the open directory dir and leaves it.
// A cache is written by sandboxed code: links are removed, never
// followed, and nothing is entered but by descriptor. Folders made
// read-only (Go's module cache makes its own so) are made writable
// first, which only their owner, the one emptying them, may do.
func Empty(dir *os.File) error {
	return emptyAt(int(dir.Fd()))
}

func emptyAt(fd int) error {
	// Read through a dup: closing the File closes its descriptor.
	dup, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	var errs []error
	for {
		names, err := f.Readdirnames(512)
		for _, n := range names {
			errs = append(errs, removeAt(fd, n))
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

func removeAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_ = unix.Fchmod(fd, 0o700) // a read-only folder of the cache's, made to be emptied
	err = emptyAt(fd)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// Usage counts the bytes (allocated) and files under the open directory
// dir, by descriptor, never through a link.
func Usage(dir *os.File) (bytes, files int64) {
	usageAt(int(dir.Fd()), &bytes, &files, 0)
	return bytes, files
}

func usageAt(fd int, bytes, files *int64, depth int) {
	if depth > 64 {
		return
	}
	dup, err := unix.Dup(fd)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	for {
		names, err := f.Readdirnames(512)
		for _, n := range names {
			var st unix.Stat_t
			if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			*files++
			*bytes += st.Blocks * 512
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
					usageAt(sub, bytes, files, depth+1)
					unix.Close(sub)
				}
			}
		}
		if err != nil || len(names) == 0 {
			return
		}
	}
}

// OpenDirFlags open a cache folder itself, not a link there.
const OpenDirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW
