package spaceapps

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
)

// A folder an app is registered from is the person's (or an agent's
// choice): the engine reads it as the sandbox user and by descriptor, as
// the file API reads a sandbox's folder, so that it hands the app
// nothing the sandbox user could not read itself (a root-only file of
// /var/tmp), and no link planted in it, even while it is read, leads the
// engine elsewhere (to /etc/shadow, or an endless /dev/zero).

// maxManifest bounds a manifest (ParseManifest refuses larger ones).
const maxManifest = 256 << 10

// user is who reads a person's folder: for a root engine, its own uid of
// the sandbox range, which owns nothing and is no sandbox's (a folder's
// files are handed to the app only when anyone may read them); the
// engine's own user (nil) otherwise.
func (s *Supervisor) user() *backends.Credential { return s.e.UnownedUser() }

// ReadManifest reads and checks dir's senclaw-app.json as the engine's
// user (the engine's own staging folder).
func ReadManifest(dir string) (*Manifest, []byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	return readManifestAs(abs, nil)
}

// readManifestAs reads dir's manifest as user: a regular file, not a
// link, at most maxManifest bytes.
func readManifestAs(dir string, user *backends.Credential) (*Manifest, []byte, error) {
	var data []byte
	err := inFolder(dir, user, func(d *jailfs.Dir) error {
		var err error
		data, err = readRegular(d, ManifestFile, maxManifest)
		return err
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, bad("dir", dir, "has no %s at its root; an app directory describes its server there (see examples/space-apps)", ManifestFile)
	case err != nil:
		return nil, nil, err
	}
	m, err := ParseManifest(data)
	return m, data, err
}

// inFolder runs fn on the folder dir, opened without following a link on
// its path, as user.
func inFolder(dir string, user *backends.Credential, fn func(d *jailfs.Dir) error) error {
	d, err := jailfs.OpenDir(filepath.Clean(dir))
	if err != nil {
		if errors.Is(err, jailfs.ErrLink) {
			return bad("dir", dir, "now goes through a symbolic link (one was put in its path since it was checked); give the folder again")
		}
		return err
	}
	defer d.Close()
	return jailfs.As(user, func() error { return fn(d) })
}

// readRegular reads name in d: a regular file (a FIFO or device is
// opened without waiting and refused), at most max bytes.
func readRegular(d *jailfs.Dir, name string, max int64) ([]byte, error) {
	f, err := openRegular(d, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > max {
		return nil, bad(name, nil, "is larger than %d KiB", max>>10)
	}
	return data, nil
}

// openRegular opens name in d for reading, refusing links and anything
// but a regular file.
func openRegular(d *jailfs.Dir, name string) (*os.File, error) {
	f, err := d.OpenRegular(name)
	switch {
	case errors.Is(err, jailfs.ErrLink):
		return nil, bad(name, nil, "is a symbolic link or goes through one, which is not followed: it could lead outside the app's folder; replace it with the file it points to")
	case errors.Is(err, fs.ErrPermission):
		return nil, bad(name, nil, "cannot be read by the sandbox user, so it is not handed to the app; make it readable, or leave it out of the app's folder")
	case errors.Is(err, jailfs.ErrNotRegular):
		return nil, bad(name, nil, "is not a regular file")
	}
	return f, err
}

// copyTree copies the person's folder src into the empty folder dst (the
// engine's staging folder), reading as user and by descriptor, refusing
// links, special files, what user may not read, and trees over the copy
// limits (entries, bytes, MaxDepth).
func copyTree(src, dst string, user *backends.Credential) error {
	var size int64
	n := 0
	var walk func(d *jailfs.Dir, rel string) error
	walk = func(d *jailfs.Dir, rel string) error {
		var list []jailfs.Entry
		err := jailfs.As(user, func() error {
			var err error
			list, err = d.ReadDir(rel)
			return err
		})
		switch {
		case errors.Is(err, fs.ErrPermission) && rel == ".":
			return bad("dir", src, "cannot be listed by the sandbox user (uid %d), who the app runs as; make it readable to that user (chmod o+rx), or run the app in place", uidOf(user))
		case errors.Is(err, fs.ErrPermission):
			return bad("dir", src, "holds %s, which the sandbox user cannot read, so it is not handed to the app; make it readable, or leave it out of the app's folder", rel)
		}
		if err != nil {
			return fmt.Errorf("reading the app's folder: %w", err)
		}
		for _, e := range list {
			child := path.Join(rel, e.Name)
			if n++; n > MaxCopyEntries {
				return bad("dir", src, "has more than %d files and folders; run it in place (--in-place) instead", MaxCopyEntries)
			}
			if depth := strings.Count(child, "/") + 1; depth > MaxDepth {
				return bad("dir", src, "holds %s, %d levels deep; at most %d are copied: run it in place (--in-place) instead", clip(child), depth, MaxDepth)
			}
			target := filepath.Join(dst, filepath.FromSlash(child))
			switch {
			case e.Mode&fs.ModeSymlink != 0:
				return bad("dir", src, "holds a symbolic link (%s), which is not copied: it could lead outside the app; replace it with the file, or run the app in place (--in-place)", child)
			case e.Mode.IsDir():
				if err := os.Mkdir(target, 0o755); err != nil {
					return err
				}
				if err := walk(d, child); err != nil {
					return err
				}
				continue
			case !e.Mode.IsRegular():
				return bad("dir", src, "holds %s, which is not a regular file or folder", child)
			}
			if err := copyFile(d, user, child, target, &size, src); err != nil {
				return err
			}
		}
		return nil
	}
	return inFolder(src, nil, func(d *jailfs.Dir) error { return walk(d, ".") })
}

// copyFile copies the regular file rel of d, opened as user, to target
// (as the engine), counting its bytes in size.
func copyFile(d *jailfs.Dir, user *backends.Credential, rel, target string, size *int64, src string) error {
	var f *os.File
	err := jailfs.As(user, func() error {
		var err error
		f, err = openRegular(d, rel)
		return err
	})
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	left := MaxCopyBytes - *size
	out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fi.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(f, left+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying %s: %w", rel, err)
	}
	if *size += n; *size > MaxCopyBytes {
		return bad("dir", src, "is larger than %d MiB; run it in place (--in-place) instead", MaxCopyBytes>>20)
	}
	return nil
}

// uidOf is user's uid (the engine's own when nil).
func uidOf(user *backends.Credential) int {
	if user == nil {
		return os.Geteuid()
	}
	return int(user.UID)
}
