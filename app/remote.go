package app

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/backends/netfwd/remotefs"
)

// A sandbox on a named engine lives on another machine: its workspace is
// a volume there, which the engine reaches only through its backend (the
// forwarder in the container, as the sandbox user, with the same jail as
// a local workspace's: remotefs), its mounts are copies made once, its
// code files and trace hooks go in with the run (Spec.Files), and a
// background run's log is kept on this machine.

// remoteWorkspace is where a remote sandbox's workspace is inside its
// container, and so its Workspace.
const remoteWorkspace = "/work"

// fileOpTimeout bounds one file operation through a remote engine.
const fileOpTimeout = 10 * time.Minute

// checkMountCopies refuses mounts that cannot be what they ask for: a
// bind of this machine's folder on an engine elsewhere, a copy on this
// machine.
func checkMountCopies(sb Sandbox) error {
	for i, m := range sb.Mounts {
		field := fmt.Sprintf("mounts[%d].copy", i)
		switch {
		case sb.Engine != "" && !m.Copy:
			return badField(field, false, "the folder %s of this machine cannot be bound on engine %s, a Docker engine on another machine; ask for a copy made once (copy: true), or drop the mount", m.Source, sb.Engine)
		case sb.Engine == "" && m.Copy:
			return badField(field, true, "is for sandboxes on an engine on another machine; here the folder %s is bound itself: drop copy", m.Source)
		}
	}
	return nil
}

// remoteBackend is sb's engine's backend when sb lives on another
// machine, or why it cannot be reached.
func (e *Engine) remoteBackend(ctx context.Context, sb *Sandbox) (*docker.Backend, error) {
	n := e.namedEngine(sb.Engine)
	if n == nil {
		return nil, &UnreachableError{Engine: sb.Engine, Reason: "it is not in the settings any more; add it again"}
	}
	if c := e.engineCap(ctx, n); !c.Usable() {
		return nil, &UnreachableError{Engine: sb.Engine, Reason: c.Reason}
	}
	return n.b, nil
}

// remoteFiles runs fn with the file API of sb's workspace on its engine.
func (e *Engine) remoteFiles(sb *Sandbox, fn func(ctx context.Context, c *remotefs.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), fileOpTimeout)
	defer cancel()
	b, err := e.remoteBackend(ctx, sb)
	if err != nil {
		return err
	}
	spec, err := e.specFor(ctx, sb)
	if err != nil {
		return err
	}
	c, done, err := b.Files(ctx, spec)
	if err != nil {
		e.linkLost(sb, err)
		return err
	}
	defer done()
	err = fn(ctx, c)
	e.linkLost(sb, err)
	return err
}

// remoteFileError turns an error of the remote file API into one of
// those a local workspace gives.
func (e *Engine) remoteFileError(sb *Sandbox, j jailed, err error) error {
	var big *remotefs.TooBigError
	var grew *remotefs.GrewError
	switch {
	case errors.Is(err, remotefs.ErrLink):
		return e.fileError(sb, j, jailfs.ErrLink)
	case errors.Is(err, remotefs.ErrNotRegular):
		return badField("path", j.rel, "is not a regular file")
	case errors.Is(err, remotefs.ErrNotADir):
		return badField("path", j.rel, "is not a directory")
	case errors.As(err, &big):
		return badField("path", j.rel, "is %d bytes, more than the %d a read returns", big.Size, big.Limit)
	case errors.As(err, &grew):
		return badField("path", j.rel, "grew past %d bytes while it was read", grew.Limit)
	}
	var ue *UnreachableError
	if errors.As(err, &ue) {
		return err
	}
	return e.fileError(sb, j, err)
}

// remoteFilesList, remoteRead, ... are the file API's operations on a
// remote sandbox; j.rel is the path below /work, mounts included (their
// copies are mounted there).
func (e *Engine) remoteList(sb *Sandbox, j jailed) ([]FileEntry, error) {
	var entries []remotefs.Entry
	err := e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) (err error) {
		entries, err = c.List(ctx, j.rel)
		return err
	})
	if err != nil {
		return nil, e.remoteFileError(sb, j, err)
	}
	out := make([]FileEntry, 0, len(entries))
	for _, en := range entries {
		rel := path.Join(j.rel, en.Name)
		fe := FileEntry{Name: en.Name, Path: rel, Dir: en.Kind == "dir", Size: en.Size, ModifiedMs: en.ModMs, ReadOnly: j.readOnly, Link: en.Link}
		for _, m := range sb.Mounts {
			if m.Target == rel {
				fe.Dir, fe.ReadOnly = true, m.ReadOnly
			}
		}
		out = append(out, fe)
	}
	return out, nil
}

func (e *Engine) remoteRead(sb *Sandbox, j jailed, limit int64) ([]byte, error) {
	var data []byte
	err := e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) (err error) {
		data, err = c.Read(ctx, j.rel, limit)
		return err
	})
	if err != nil {
		return nil, e.remoteFileError(sb, j, err)
	}
	return data, nil
}

func (e *Engine) remoteWrite(sb *Sandbox, j jailed, r io.Reader) (int64, error) {
	var n int64
	err := e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) (err error) {
		n, err = c.Write(ctx, j.rel, r)
		return err
	})
	if err != nil {
		return 0, e.remoteFileError(sb, j, err)
	}
	return n, nil
}

func (e *Engine) remoteMkdir(sb *Sandbox, j jailed) error {
	err := e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) error { return c.Mkdir(ctx, j.rel) })
	if err != nil {
		return e.remoteFileError(sb, j, err)
	}
	return nil
}

func (e *Engine) remoteRemove(sb *Sandbox, j jailed) error {
	err := e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) error { return c.Remove(ctx, j.rel) })
	if err != nil {
		return e.remoteFileError(sb, j, err)
	}
	return nil
}

// Bounds of a folder copied to an engine elsewhere.
const (
	maxCopyEntries = 200_000
	maxCopyBytes   = 16 << 30
)

// fillMounts copies the host folders of sb's copy mounts (only those
// named, or all when only is nil) into their volumes on sb's engine.
func (e *Engine) fillMounts(ctx context.Context, sb *Sandbox, only func(backends.Mount) bool) error {
	var todo []backends.Mount
	for _, m := range sb.Mounts {
		if m.Copy && (only == nil || only(m)) {
			todo = append(todo, m)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	b, err := e.remoteBackend(ctx, sb)
	if err != nil {
		return err
	}
	spec, err := e.specFor(ctx, sb)
	if err != nil {
		return err
	}
	for _, m := range todo {
		err := b.FillMount(ctx, spec, m, func(tw *tar.Writer, prefix string, uid, gid int) error {
			return copyFolder(e.userOf(sb), m.Source, tw, prefix, uid, gid)
		})
		if err != nil {
			return fmt.Errorf("copying the mount %s to engine %s: %w", m.Source, sb.Engine, err)
		}
	}
	return nil
}

// copyFolder writes the folder src of this machine into tw under
// prefix, read as user (the sandbox's: what it could read of a bind of
// the folder, nil the engine's own): links are copied as links (never
// followed), what is neither a file, a folder nor a link is left out,
// and every entry belongs to the container's user (uid, gid).
func copyFolder(user *backends.Credential, src string, tw *tar.Writer, prefix string, uid, gid int) error {
	d, err := jailfs.OpenDir(src)
	if err != nil {
		if errors.Is(err, jailfs.ErrLink) {
			return fmt.Errorf("%s now goes through a symbolic link; nothing was copied", src)
		}
		return err
	}
	defer d.Close()
	entries, total := 0, int64(0)
	buf := make([]byte, 64<<10)
	var walk func(rel string) error
	walk = func(rel string) error {
		list, err := d.ReadDir(rel)
		if err != nil {
			return fmt.Errorf("reading %s: %w", filepath.Join(src, rel), err)
		}
		for _, en := range list {
			entries++
			if entries > maxCopyEntries {
				return fmt.Errorf("%s holds more than %d entries, more than a copy takes; copy a smaller folder, or use senclaw cp", src, maxCopyEntries)
			}
			name := path.Join(rel, en.Name)
			if rel == "." {
				name = en.Name
			}
			h := &tar.Header{Name: prefix + name, Uid: uid, Gid: gid, Mode: int64(en.Mode.Perm()), ModTime: en.ModTime}
			switch {
			case en.Mode.IsDir():
				h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
				if err := tw.WriteHeader(h); err != nil {
					return err
				}
				if err := walk(name); err != nil {
					return err
				}
			case en.Mode&fs.ModeSymlink != 0:
				h.Typeflag, h.Linkname = tar.TypeSymlink, en.Link
				if err := tw.WriteHeader(h); err != nil {
					return err
				}
			case en.Mode.IsRegular():
				f, err := d.OpenRegular(name)
				if err != nil {
					continue // gone, or no longer a file: not copied
				}
				fi, err := f.Stat()
				if err == nil {
					total += fi.Size()
					if total > maxCopyBytes {
						err = fmt.Errorf("%s holds more than %d GiB, more than a copy takes", src, maxCopyBytes>>30)
					}
				}
				if err == nil {
					h.Typeflag, h.Size = tar.TypeReg, fi.Size()
					err = tw.WriteHeader(h)
				}
				if err == nil {
					// A file that shrank meanwhile is padded, one that
					// grew is cut: the header's size is what goes.
					n, cerr := io.CopyBuffer(tw, io.LimitReader(f, h.Size), buf)
					if cerr == nil && n < h.Size {
						_, cerr = io.CopyN(tw, zeros{}, h.Size-n)
					}
					err = cerr
				}
				f.Close()
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	return jailfs.As(user, func() error { return walk(".") })
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// remoteLogFile keeps the logs of background runs of sandboxes elsewhere
// on this machine: the output comes here over the exec's stream anyway.
func (e *Engine) remoteLogFile(sb *Sandbox, runID string) (*os.File, error) {
	dir := filepath.Join(e.opts.DataDir, "remote-logs", sb.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the run's log directory: %w", err)
	}
	return os.OpenFile(filepath.Join(dir, runID+".log"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
}

// openRemoteLog opens the log of rec, a background run on another
// machine's engine, kept here: only the file remoteLogFile made for it
// (the engine's own folder, which no sandbox writes).
func (e *Engine) openRemoteLog(rec *RunRecord) (*os.File, error) {
	want := filepath.Join(e.opts.DataDir, "remote-logs", rec.SandboxID, rec.ID+".log")
	if rec.LogFile != want || strings.ContainsAny(rec.SandboxID+rec.ID, "/") {
		return nil, fmt.Errorf("the log of run %s is not where the engine keeps a remote run's log", rec.ID)
	}
	root, err := os.OpenRoot(filepath.Dir(want))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Open(filepath.Base(want))
}

// forgetRemoteLogs removes a deleted sandbox's logs kept here.
func (e *Engine) forgetRemoteLogs(id string) {
	if id != "" && !strings.ContainsAny(id, "/.") {
		_ = os.RemoveAll(filepath.Join(e.opts.DataDir, "remote-logs", id))
	}
}

// remoteWatchEvery is how often the watchdog counts a workspace
// elsewhere.
const remoteWatchEvery = 2 * time.Second

// remoteWatch is the disk watchdog of a workspace elsewhere: it counts
// through the forwarder in the container (the sandbox user's view of
// /work), every remoteWatchEvery, and says when the quota is passed.
type remoteWatch struct {
	over    chan struct{}
	quit    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	reason  string
	stopped sync.Once
}

func (e *Engine) watchRemoteDisk(sb *Sandbox) *remoteWatch {
	w := &remoteWatch{over: make(chan struct{}), quit: make(chan struct{})}
	limit, files := int64(sb.DiskMB)<<20, diskquota.Inodes(sb.DiskMB)
	go func() {
		t := time.NewTicker(remoteWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-t.C:
			}
			var used, n int64
			err := e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) (err error) {
				used, n, err = c.Usage(ctx)
				return err
			})
			if err != nil {
				continue
			}
			why := ""
			switch {
			case used > limit:
				why = fmt.Sprintf("the workspace holds %d MB, more than its %d MB", used>>20, sb.DiskMB)
			case n > files:
				why = fmt.Sprintf("the workspace holds %d files, more than its %d", n, files)
			}
			if why != "" {
				w.mu.Lock()
				w.reason = why
				w.mu.Unlock()
				w.once.Do(func() { close(w.over) })
				return
			}
		}
	}()
	return w
}

func (w *remoteWatch) Exceeded() <-chan struct{} { return w.over }

func (w *remoteWatch) Reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

func (w *remoteWatch) Stop() { w.stopped.Do(func() { close(w.quit) }) }

// readRemoteAll reads a file of a remote workspace for the engine's own
// use (a trace file), up to limit bytes.
func (e *Engine) readRemoteAll(sb *Sandbox, rel string, limit int64) ([]byte, error) {
	var data []byte
	err := e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) (err error) {
		data, err = c.Read(ctx, rel, limit)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
	return data, err
}
