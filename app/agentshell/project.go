package agentshell

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app/jailfs"
)

// A project's settings files are read and written through the project
// itself: whatever writes the project (a sandboxed command, an agent)
// could have put a link where a settings file or its folder is, to make
// senclaw read, or write its hook into, a file elsewhere (~/.bashrc,
// another tool's settings). The project, which the person named, is
// opened once; below it no link is followed (jailfs: openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), not even one that stays inside.

// inProject runs fn with the project opened and file's path in it.
func inProject(project, file string, fn func(d *jailfs.Dir, rel string) error) error {
	rel, err := filepath.Rel(project, file)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is not inside the project %s", file, project)
	}
	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		return err
	}
	d, err := jailfs.OpenDir(real)
	if err != nil {
		return err
	}
	defer d.Close()
	err = fn(d, filepath.ToSlash(rel))
	if errors.Is(err, jailfs.ErrLink) {
		return fmt.Errorf("%s is, or lies in a folder that is, a symbolic link: senclaw reads and writes a project's settings only inside the project and follows no link there, since whatever writes the project (a sandboxed command) could make one lead anywhere; replace the link with the file or folder it leads to, and try again", file)
	}
	return err
}

// readInProject reads file, which lies in project, bounded: a link on
// the way is an error (fs.ErrNotExist when nothing is there).
func readInProject(project, file string) ([]byte, error) {
	var data []byte
	err := inProject(project, file, func(d *jailfs.Dir, rel string) error {
		f, err := d.OpenRegular(rel)
		if err != nil {
			return err
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, MaxSettings+1))
		if err == nil && len(data) > MaxSettings {
			err = fmt.Errorf("%s is larger than %d bytes", file, MaxSettings)
		}
		return err
	})
	return data, err
}

// writeInProject writes data over file, which lies in project: its
// folders made if missing, a temporary file beside it renamed over it
// (keeping its mode), all by the project's descriptor.
func writeInProject(project, file string, data []byte) error {
	return inProject(project, file, func(d *jailfs.Dir, rel string) error {
		dir, base := path.Split(rel)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "" {
			dir = "."
		}
		if err := d.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		switch e, err := d.Lstat(rel); {
		case err == nil && e.Mode&fs.ModeSymlink != 0:
			return jailfs.ErrLink
		case err == nil && !e.Mode.IsRegular():
			return fmt.Errorf("%s is not a regular file", file)
		case err == nil:
			mode = e.Mode.Perm()
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		var suffix [6]byte
		rand.Read(suffix[:])
		tmp := path.Join(dir, "."+base+".senclaw-"+hex.EncodeToString(suffix[:]))
		f, err := d.Open(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(mode) // the umask may have taken bits off
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = d.Rename(tmp, rel)
		}
		if err != nil {
			_ = d.RemoveAll(tmp)
		}
		return err
	})
}

// removeInProject removes file, a regular file in project, and with dir
// its folder when that is empty, by the project's descriptor.
func removeInProject(project, file string, dir bool) error {
	return inProject(project, file, func(d *jailfs.Dir, rel string) error {
		switch e, err := d.Lstat(rel); {
		case err != nil:
			return err
		case e.Mode&fs.ModeSymlink != 0:
			return jailfs.ErrLink
		case !e.Mode.IsRegular():
			return fmt.Errorf("%s is not a regular file", file)
		}
		if err := d.RemoveAll(rel); err != nil {
			return err
		}
		if parent := path.Dir(rel); dir && parent != "." {
			_ = d.RemoveEmpty(parent)
		}
		return nil
	})
}
