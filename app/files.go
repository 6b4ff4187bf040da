package app

import (
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

	"github.com/senclaw/sandbox/backends"
)

// MaxFileRead is the default and largest size a file read returns.
const MaxFileRead = 2 << 20

// MaxFileWrite bounds one file write.
const MaxFileWrite = 32 << 20

// FileEntry is one entry of a workspace listing.
type FileEntry struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	Dir        bool   `json:"dir"`
	Size       int64  `json:"size"`
	ModifiedMs int64  `json:"modifiedMs"`
	// Link is set for a symbolic link, with its target.
	Link string `json:"link,omitempty"`
	// ReadOnly is true inside a read-only mount.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// FileContent is what a read returns.
type FileContent struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Encoding is "utf-8" or "base64".
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
}

// jailed is a path inside a sandbox resolved to the directory it lives in
// (the workspace or a mount's source) and the name below it. All access
// goes through an os.Root on that directory, which refuses to leave it by
// "..", by symbolic links, or by a link swapped in while we look (it
// resolves beneath the root fd, not by re-walking the path).
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

func (j jailed) open() (*os.Root, error) {
	r, err := os.OpenRoot(j.root)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", j.root, err)
	}
	return r, nil
}

// fileError turns an os error under the jail into a message for people.
func fileError(j jailed, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &NotFoundError{Kind: "file", ID: j.rel, Where: "in the sandbox"}
	case strings.Contains(err.Error(), "path escapes from parent"):
		return badField("path", j.rel, "leads outside the sandbox (through a symbolic link); refused")
	case errors.Is(err, fs.ErrPermission):
		return badField("path", j.rel, "permission denied")
	}
	return fmt.Errorf("%s: %w", j.rel, err)
}

// Files lists the directory p of the sandbox id.
func (e *Engine) Files(id, p string) ([]FileEntry, error) {
	sb, j, root, err := e.openJailed(id, p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	dir, err := root.Open(j.name)
	if err != nil {
		return nil, fileError(j, err)
	}
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return nil, badField("path", j.rel, "is not a directory")
	}
	out := make([]FileEntry, 0, len(entries))
	for _, de := range entries {
		info, err := de.Info()
		if err != nil {
			continue
		}
		rel := path.Join(j.rel, de.Name())
		fe := FileEntry{Name: de.Name(), Path: rel, Dir: de.IsDir(), Size: info.Size(), ModifiedMs: info.ModTime().UnixMilli(), ReadOnly: j.readOnly}
		if de.Type()&fs.ModeSymlink != 0 {
			fe.Link, _ = root.Readlink(path.Join(j.name, de.Name()))
		}
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
	_, j, root, err := e.openJailed(id, p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// O_NONBLOCK: a FIFO planted by sandboxed code must not hang us.
	f, err := root.OpenFile(j.name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fileError(j, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fileError(j, err)
	}
	if !info.Mode().IsRegular() {
		return nil, badField("path", j.rel, "is not a regular file")
	}
	if info.Size() > limit {
		return nil, badField("path", j.rel, "is %d bytes, more than the %d a read returns", info.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fileError(j, err)
	}
	if int64(len(data)) > limit {
		return nil, badField("path", j.rel, "grew past %d bytes while it was read", limit)
	}
	fc := &FileContent{Path: j.rel, Size: int64(len(data)), Encoding: "utf-8", Content: string(data)}
	if asBase64 || !isText(data) {
		fc.Encoding, fc.Content = "base64", base64.StdEncoding.EncodeToString(data)
	}
	return fc, nil
}

func isText(b []byte) bool {
	return !slices.Contains(b, 0) && strings.ToValidUTF8(string(b), "\uFFFD") == string(b)
}

// WriteFile writes data to the file p, creating its parent folders.
// Writes into a read-only mount are refused.
func (e *Engine) WriteFile(id, p string, data []byte) (*FileEntry, error) {
	if len(data) > MaxFileWrite {
		return nil, badField("content", nil, "is %d bytes, more than the %d a write takes", len(data), MaxFileWrite)
	}
	sb, j, root, err := e.writable(id, p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if j.name == "." {
		return nil, badField("path", j.rel, "names the sandbox's folder itself, not a file")
	}
	if dir := path.Dir(j.name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return nil, fileError(j, err)
		}
		e.chownTree(sb, j, root, dir)
	}
	f, err := root.OpenFile(j.name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fileError(j, err)
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		f.Close()
		return nil, badField("path", j.rel, "is not a regular file")
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fileError(j, err)
	}
	if err := f.Close(); err != nil {
		return nil, fileError(j, err)
	}
	if j.root == sb.Workspace {
		if u := e.sandboxUser(); u != nil {
			_ = root.Lchown(j.name, int(u.UID), int(u.GID))
		}
	}
	return &FileEntry{Name: path.Base(j.rel), Path: j.rel, Size: int64(len(data)), ModifiedMs: time.Now().UnixMilli()}, nil
}

// Mkdir creates the folder p and its parents.
func (e *Engine) Mkdir(id, p string) error {
	sb, j, root, err := e.writable(id, p)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(j.name, 0o755); err != nil {
		return fileError(j, err)
	}
	e.chownTree(sb, j, root, j.name)
	return nil
}

// DeleteFile removes the file or folder p (a folder with its contents).
// The workspace itself and mount points cannot be deleted.
func (e *Engine) DeleteFile(id, p string) error {
	_, j, root, err := e.writable(id, p)
	if err != nil {
		return err
	}
	defer root.Close()
	if j.name == "." {
		return badField("path", j.rel, "is the sandbox's folder or a mount point; delete the sandbox or unmount instead")
	}
	if _, err := root.Lstat(j.name); err != nil {
		return fileError(j, err)
	}
	if err := root.RemoveAll(j.name); err != nil {
		return fileError(j, err)
	}
	return nil
}

// openJailed resolves p in the sandbox id and opens the root it lives
// under; the caller closes the root.
func (e *Engine) openJailed(id, p string) (*Sandbox, jailed, *os.Root, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, jailed{}, nil, err
	}
	j, err := resolve(sb, p)
	if err != nil {
		return nil, j, nil, err
	}
	root, err := j.open()
	if err != nil {
		return nil, j, nil, err
	}
	return sb, j, root, nil
}

// writable is openJailed for a write: read-only mounts are refused.
func (e *Engine) writable(id, p string) (*Sandbox, jailed, *os.Root, error) {
	sb, j, root, err := e.openJailed(id, p)
	if err == nil && j.readOnly {
		root.Close()
		return nil, j, nil, badField("path", j.rel, "is inside a read-only mount; writes are refused")
	}
	return sb, j, root, err
}

// chownTree gives the folders of dir (relative to root) to the sandbox user
// when the engine is root, so sandboxed code can write into them. Only in
// the workspace: a mounted folder of the user keeps its owners.
func (e *Engine) chownTree(sb *Sandbox, j jailed, root *os.Root, dir string) {
	u := e.sandboxUser()
	if u == nil || j.root != sb.Workspace {
		return
	}
	for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		_ = root.Lchown(d, int(u.UID), int(u.GID))
	}
}
