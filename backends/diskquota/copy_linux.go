package diskquota

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// moveTree moves what directory src holds into directory dst (another
// filesystem: a workspace into its image, or back out), then removes it
// from src. It acts as the engine on files sandboxed code may have made,
// so it follows no link (both sides are os.Roots; a symlink is moved as a
// link), moves directories, regular files and symlinks only (a fifo or a
// socket is left out), keeps modes without setuid and setgid, owners and
// modification times. A dst that runs out of space gives ErrTooBig, and
// src is left as it was.
func moveTree(src, dst string) error {
	s, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := copyDir(s, d, "."); err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) {
			return ErrTooBig
		}
		return err
	}
	entries, err := fs.ReadDir(s.FS(), ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := s.RemoveAll(e.Name()); err != nil {
			return fmt.Errorf("removing %s after moving it: %w", e.Name(), err)
		}
	}
	return nil
}

// copyDir copies the entries of dir in s into dir in d.
func copyDir(s, d *os.Root, dir string) error {
	entries, err := fs.ReadDir(s.FS(), dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if dir != "." {
			name = dir + "/" + name
		}
		fi, err := s.Lstat(name)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := d.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if err := copyDir(s, d, name); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyFile(s, d, name); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := s.Readlink(name)
			if err != nil {
				return err
			}
			if err := d.Symlink(target, name); err != nil {
				return err
			}
		default:
			continue // a fifo, a socket: nothing to keep
		}
		if err := keepAttrs(d, name, fi); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(s, d *os.Root, name string) error {
	in, err := s.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// keepAttrs gives name in d fi's owner, mode (no setuid, no setgid) and
// modification time; a symlink keeps only its owner.
func keepAttrs(d *os.Root, name string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := d.Lchown(name, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	mode := fi.Mode().Perm() | fi.Mode()&fs.ModeSticky
	if err := d.Chmod(name, mode); err != nil {
		return err
	}
	return d.Chtimes(name, fi.ModTime(), fi.ModTime())
}
