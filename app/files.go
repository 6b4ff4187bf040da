package app

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
)

// jailed is a path inside a sandbox resolved to the directory it lives in
// (the workspace or a mount's source) and the name below it. All access
// goes through jailfs: the directory is opened without following a link
// anywhere on its path, every name below it is resolved beneath it by
// descriptor without following a link, and the work is done with the
// sandbox user's credentials (Engine.inJail).
type jailed struct {
	root     string // host directory
	name     string // relative name under root, "." for the root itself
	rel      string // the path as the caller named it, cleaned
	readOnly bool
}

// resolve maps p, relative to the workspace, onto the workspace or the mount
// it falls under. It refuses lexical escapes; os.Root refuses the rest.
func resolve(sb *Sandbox, p string) (jailed, error) {
	orig := p
	if strings.HasPrefix(p, "/") {
		// The workspace's own host path is accepted (what the run sees as
		// its folder); any other absolute path is not the sandbox's.
		if p != sb.Workspace && !strings.HasPrefix(p, sb.Workspace+"/") {
			return jailed{}, badField("path", orig, "is absolute: paths of the file API are relative to the sandbox's folder (%s); a file outside it cannot be reached this way", sb.Workspace)
		}
		p = strings.TrimPrefix(p, sb.Workspace)
	}
	p = strings.TrimLeft(p, "/")
	if strings.ContainsRune(p, 0) {
		return jailed{}, badField("path", orig, "contains a NUL byte")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return jailed{}, badField("path", orig, "must stay inside the sandbox: .. is not allowed")
		}
	}
	rel := path.Clean("/" + p)[1:]
	if rel == "" {
		rel = "."
	}
	// The longest mount target that contains rel wins.
	mounts := slices.Clone(sb.Mounts)
	slices.SortFunc(mounts, func(a, b backends.Mount) int { return len(b.Target) - len(a.Target) })
	for _, m := range mounts {
		if rel == m.Target || strings.HasPrefix(rel, m.Target+"/") {
			name := strings.TrimPrefix(strings.TrimPrefix(rel, m.Target), "/")
			if name == "" {
				name = "."
			}
			return jailed{root: m.Source, name: name, rel: rel, readOnly: m.ReadOnly}, nil
		}
	}
	return jailed{root: sb.Workspace, name: rel, rel: rel}, nil
}

// fileRefused counts a write the file API refused (bad input on its path)
// among the refusals of the sandbox's runs going now.
func (e *Engine) fileRefused(id, p string, err error) {
	var fe *FieldError
	if err == nil || !errors.As(err, &fe) || fe.Field != "path" {
		return
	}
	allow := "write inside the sandbox's folder or a read-write mount, by a path relative to the folder"
	switch {
	case strings.Contains(fe.Reason, "read-only mount"):
		allow = "mount the folder read-write (sbx_mount readOnly: false), or write elsewhere in the sandbox's folder"
	case strings.Contains(fe.Reason, "symbolic link"):
		allow = "write to the link's target path instead"
	case strings.Contains(fe.Reason, "permission denied"):
		allow = "the sandbox's user may not write there: write elsewhere in its folder"
	case strings.Contains(fe.Reason, "protected") || strings.Contains(fe.Reason, "read-only"):
		allow = ""
	}
	if id, rerr := e.ResolveSandbox(id); rerr == nil {
		e.writeRefused(id, p, fe.Reason, allow)
	}
}

// fileError turns an error under the jail into a message for people.
func (e *Engine) fileError(sb *Sandbox, j jailed, err error) error {
	var fe *FieldError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return &NotFoundError{Kind: "file", ID: j.rel, Where: "in the sandbox"}
	case errors.Is(err, jailfs.ErrLink):
		return badField("path", j.rel, "goes through a symbolic link, which the file API never follows (the sandbox could have planted it); use the link's target path instead")
	case errors.Is(err, fs.ErrPermission):
		if u := e.userOf(sb); u != nil {
			return badField("path", j.rel, "permission denied: the sandbox's user (uid %d) may not do that here, and the file API acts with that user's rights", u.UID)
		}
		return badField("path", j.rel, "permission denied")
	case errors.Is(err, syscall.ENOTDIR):
		return badField("path", j.rel, "has a part that is not a directory")
	case errors.Is(err, jailfs.ErrUnsupported):
		return fmt.Errorf("%s: the file API of an engine running as root acts with the sandbox user's rights, which needs Linux; run the engine as your own user", j.rel)
	}
	return fmt.Errorf("%s: %w", j.rel, err)
}

// Files lists the directory p of the sandbox id.
func (e *Engine) Files(id, p string) ([]FileEntry, error) {
	sb, j, err := e.jailedPath(id, p, false)
	if err != nil {
		return nil, err
	}
	if remoteSandbox(sb) {
		return e.remoteList(sb, j)
	}
	var entries []jailfs.Entry
	if err := e.inJail(sb, j, func(d *jailfs.Dir) (err error) {
		if fi, err := d.Lstat(j.name); err == nil && fi.Mode&fs.ModeSymlink != 0 {
			return jailfs.ErrLink
		} else if err == nil && !fi.Mode.IsDir() {
			return badField("path", j.rel, "is not a directory")
		}
		entries, err = d.ReadDir(j.name)
		return err
	}); err != nil {
		return nil, e.fileError(sb, j, err)
	}
	out := make([]FileEntry, 0, len(entries))
	for _, de := range entries {
		rel := path.Join(j.rel, de.Name)
		fe := FileEntry{Name: de.Name, Path: rel, Dir: de.Mode.IsDir(), Size: de.Size, ModifiedMs: de.ModTime.UnixMilli(), ReadOnly: j.readOnly, Link: de.Link}
		for _, m := range sb.Mounts {
			if m.Target == rel {
				fe.Dir, fe.ReadOnly = true, m.ReadOnly
			}
		}
		out = append(out, fe)
	}
	// Mount points exist on the host only once a backend made them; list
	// them anyway, they are part of what the sandbox sees.
	for _, m := range sb.Mounts {
		if path.Dir(m.Target) != j.rel || j.root != sb.Workspace {
			continue
		}
		if !slices.ContainsFunc(out, func(fe FileEntry) bool { return fe.Path == m.Target }) {
			out = append(out, FileEntry{Name: path.Base(m.Target), Path: m.Target, Dir: true, ReadOnly: m.ReadOnly})
		}
	}
	return out, nil
}

// ReadFile reads up to limit bytes (MaxFileRead when 0) of the file p.
// Text comes back as UTF-8; with asBase64, or when the bytes are not valid
// UTF-8, as base64.
func (e *Engine) ReadFile(id, p string, limit int64, asBase64 bool) (*FileContent, error) {
	if limit <= 0 || limit > MaxFileRead {
		limit = MaxFileRead
	}
	sb, j, err := e.jailedPath(id, p, false)
	if err != nil {
		return nil, err
	}
	var data []byte
	if remoteSandbox(sb) {
		data, err = e.remoteRead(sb, j, limit)
	} else {
		err = e.readLocal(sb, j, limit, &data)
	}
	if err != nil {
		return nil, err
	}
	fc := &FileContent{Path: j.rel, Size: int64(len(data)), Encoding: "utf-8", Content: string(data)}
	if asBase64 || !isText(data) {
		fc.Encoding, fc.Content = "base64", base64.StdEncoding.EncodeToString(data)
	}
	return fc, nil
}

// readLocal reads j of a local workspace into data, up to limit bytes.
func (e *Engine) readLocal(sb *Sandbox, j jailed, limit int64, out *[]byte) error {
	var data []byte
	err := e.inJail(sb, j, func(d *jailfs.Dir) error {
		// A FIFO planted by sandboxed code must not hang us.
		f, err := d.OpenRegular(j.name)
		if errors.Is(err, jailfs.ErrNotRegular) {
			return badField("path", j.rel, "is not a regular file")
		}
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		if info.Size() > limit {
			return badField("path", j.rel, "is %d bytes, more than the %d a read returns", info.Size(), limit)
		}
		if data, err = io.ReadAll(io.LimitReader(f, limit+1)); err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return badField("path", j.rel, "grew past %d bytes while it was read", limit)
		}
		return nil
	})
	if err != nil {
		return e.fileError(sb, j, err)
	}
	*out = data
	return nil
}

func isText(b []byte) bool {
	return !slices.Contains(b, 0) && strings.ToValidUTF8(string(b), "\uFFFD") == string(b)
}

// WriteFile writes data to the file p, creating its parent folders.
// Writes into a read-only mount are refused.
func (e *Engine) WriteFile(id, p string, data []byte) (_ *FileEntry, err error) {
	defer func() { e.fileRefused(id, p, err) }()
	if len(data) > MaxFileWrite {
		return nil, badField("content", nil, "is %d bytes, more than the %d a write takes", len(data), MaxFileWrite)
	}
	sb, j, err := e.jailedPath(id, p, true)
	if err != nil {
		return nil, err
	}
	if j.name == "." {
		return nil, badField("path", j.rel, "names the sandbox's folder itself, not a file")
	}
	if remoteSandbox(sb) {
		n, err := e.remoteWrite(sb, j, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return &FileEntry{Name: path.Base(j.rel), Path: j.rel, Size: n, ModifiedMs: time.Now().UnixMilli()}, nil
	}
	err = e.inJail(sb, j, func(d *jailfs.Dir) error {
		if dir := path.Dir(j.name); dir != "." {
			if err := d.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		f, err := d.Open(j.name, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
			return badField("path", j.rel, "is not a regular file")
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		return f.Close()
	})
	if err != nil {
		return nil, e.fileError(sb, j, err)
	}
	return &FileEntry{Name: path.Base(j.rel), Path: j.rel, Size: int64(len(data)), ModifiedMs: time.Now().UnixMilli()}, nil
}

// Mkdir creates the folder p and its parents.
func (e *Engine) Mkdir(id, p string) (err error) {
	defer func() { e.fileRefused(id, p, err) }()
	sb, j, err := e.jailedPath(id, p, true)
	if err != nil {
		return err
	}
	if remoteSandbox(sb) {
		return e.remoteMkdir(sb, j)
	}
	if err := e.inJail(sb, j, func(d *jailfs.Dir) error { return d.MkdirAll(j.name, 0o755) }); err != nil {
		return e.fileError(sb, j, err)
	}
	return nil
}

// DeleteFile removes the file or folder p (a folder with its contents).
// The workspace itself and mount points cannot be deleted.
func (e *Engine) DeleteFile(id, p string) (err error) {
	defer func() { e.fileRefused(id, p, err) }()
	sb, j, err := e.jailedPath(id, p, true)
	if err != nil {
		return err
	}
	if j.name == "." {
		return badField("path", j.rel, "is the sandbox's folder or a mount point; delete the sandbox or unmount instead")
	}
	if remoteSandbox(sb) {
		return e.remoteRemove(sb, j)
	}
	err = e.inJail(sb, j, func(d *jailfs.Dir) error {
		if _, err := d.Lstat(j.name); err != nil {
			return err
		}
		return d.RemoveAll(j.name)
	})
	if err != nil {
		return e.fileError(sb, j, err)
	}
	return nil
}

// jailedPath resolves p in the sandbox id; for a write, a path inside a
// read-only mount is refused.
func (e *Engine) jailedPath(id, p string, write bool) (*Sandbox, jailed, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, jailed{}, err
	}
	j, err := resolve(sb, p)
	if err != nil {
		return nil, j, err
	}
	if write && j.readOnly {
		return nil, j, badField("path", j.rel, "is inside a read-only mount; writes are refused")
	}
	if write {
		if err := e.autorunWrite(sb, j); err != nil {
			return nil, j, err
		}
	}
	return sb, j, nil
}

// inJail runs fn on the directory j lives under, as the sandbox user
// (the engine's own user when that is who sandboxes run as). The
// directory is opened by the engine, without following a link on its
// path: it is the directory the backend binds for the sandbox (the
// workspace of one of the engine's own sandboxes is opened by its real
// path: the data dir above it is the owner's, out of every sandbox's
// reach). Everything below it is resolved and done as the sandbox user.
func (e *Engine) inJail(sb *Sandbox, j jailed, fn func(d *jailfs.Dir) error) error {
	root := j.root
	if root == sb.Workspace && sb.OwnWorkspace {
		root = canonical(root)
	}
	d, err := jailfs.OpenDir(root)
	if err != nil {
		if errors.Is(err, jailfs.ErrLink) {
			return badField("path", j.rel, "lies in %s, which now goes through a symbolic link (one was put in its path since it was checked); nothing was done. Remove the link, or give the folder again", j.root)
		}
		return err
	}
	defer d.Close()
	return jailfs.As(e.fileUser(sb), func() error { return fn(d) })
}
