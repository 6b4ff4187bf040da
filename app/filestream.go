package app

import (
	"errors"
	"io"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends/diskquota"
)

// The file API's reads and writes hold a file in memory, bounded
// (MaxFileRead, MaxFileWrite): an agent's tool call. senclaw cp moves
// whole files, of any size the workspace's quota allows, so it streams
// them: the file is opened as the file API opens it (as the sandbox's
// user, beneath its folder, following no link, no FIFO), and its bytes
// are copied from or to the descriptor.

// StreamFile copies the whole file p of sandbox id to w, calling size
// with its size before the first byte. A sandbox on another machine's
// engine gives at most MaxFileRead bytes (its file service's bound).
func (e *Engine) StreamFile(id, p string, w io.Writer, size func(int64)) (int64, error) {
	sb, j, err := e.jailedPath(id, p, false)
	if err != nil {
		return 0, err
	}
	if remoteSandbox(sb) {
		data, err := e.remoteRead(sb, j, MaxFileRead)
		if err != nil {
			return 0, err
		}
		size(int64(len(data)))
		n, err := w.Write(data)
		return int64(n), err
	}
	var f *os.File
	err = e.inJail(sb, j, func(d *jailfs.Dir) error {
		var err error
		f, err = d.OpenRegular(j.name)
		if errors.Is(err, jailfs.ErrNotRegular) {
			return badField("path", j.rel, "is not a regular file")
		}
		return err
	})
	if err != nil {
		return 0, e.fileError(sb, j, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size(fi.Size())
	return io.Copy(w, f)
}

// WriteFileFrom writes r, to its end, over the file p of sandbox id,
// creating its parent folders: the file API's write without its bound;
// the workspace's quota is the bound (on another machine's engine, the
// file API's).
func (e *Engine) WriteFileFrom(id, p string, r io.Reader) (*FileEntry, error) {
	sb, j, err := e.jailedPath(id, p, true)
	if err != nil {
		return nil, err
	}
	if j.name == "." {
		return nil, badField("path", j.rel, "names the sandbox's folder itself, not a file")
	}
	if remoteSandbox(sb) {
		// Another machine's volume, whose room is not counted from here:
		// the file API's bound.
		n, err := e.remoteWrite(sb, j, io.LimitReader(r, MaxFileWrite+1))
		if err != nil {
			return nil, err
		}
		if n > MaxFileWrite {
			return nil, badField("path", j.rel, "is more than the %d bytes a file written to a sandbox on another machine's engine may have", MaxFileWrite)
		}
		return &FileEntry{Name: path.Base(j.rel), Path: j.rel, Size: n, ModifiedMs: time.Now().UnixMilli()}, nil
	}
	var f *os.File
	err = e.inJail(sb, j, func(d *jailfs.Dir) error {
		if dir := path.Dir(j.name); dir != "." {
			if err := d.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		var err error
		// Made as the sandbox's user, whose the file (and its quota) is.
		if f, err = d.Open(j.name, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, 0o644); err != nil {
			return err
		}
		if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
			f.Close()
			return badField("path", j.rel, "is not a regular file")
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, e.fileError(sb, j, err)
	}
	// The disk quota bounds the file: the room left in the workspace
	// when it starts (the quota's watchdog counts only while runs go on,
	// and a workspace's image comes with its first run).
	var room int64 = -1
	if sb.DiskMB > 0 && sb.OwnWorkspace && j.root == sb.Workspace {
		used, _ := diskquota.Usage(canonical(sb.Workspace))
		room = max(0, int64(sb.DiskMB)<<20-used)
	}
	src := r
	if room >= 0 {
		src = io.LimitReader(r, room+1)
	}
	n, err := io.Copy(f, src)
	if err == nil && room >= 0 && n > room {
		err = badField("path", j.rel, "does not fit in the sandbox's disk quota (%d MB, %d MiB of it left); nothing was kept: raise it (senclaw create --disk, or sbx_update diskMb) or make room", sb.DiskMB, room>>20)
		_ = f.Truncate(0)
		f.Close()
		_ = e.inJail(sb, j, func(d *jailfs.Dir) error { return d.RemoveAll(j.name) })
		return nil, err
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, e.fileError(sb, j, err)
	}
	return &FileEntry{Name: path.Base(j.rel), Path: j.rel, Size: n, ModifiedMs: time.Now().UnixMilli()}, nil
}
