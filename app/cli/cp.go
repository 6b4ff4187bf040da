package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
)

// Copy executes `senclaw cp SRC SANDBOX:DST` and `senclaw cp SANDBOX:SRC
// DST`: files and folders in and out of a sandbox through the engine's
// file API, which keeps every path inside the sandbox and honours its
// read-only mounts. dir is the caller's working directory, for relative
// host paths.
//
// On this machine's side, the folder named is opened as an os.Root and
// nothing below it is reached through a symbolic link: the folder may be
// one a sandbox writes (an agent's project, a read-write mount), where a
// link planted by sandboxed code (result.json -> ~/.bashrc, out ->
// ~/.config/autostart, or data.txt -> ~/.ssh/id_rsa on the way in) would
// otherwise make cp write or read, with the person's rights, wherever it
// leads. A FIFO or device there is refused, not waited on.
func Copy(ctx context.Context, c *client.Client, src, dst, dir string, io IO) int {
	sbSrc, pSrc, remoteSrc := remotePath(src)
	sbDst, pDst, remoteDst := remotePath(dst)
	switch {
	case remoteSrc == remoteDst:
		say(io.Err, "senclaw cp: give one side as SANDBOX:PATH and the other as a path on this machine, e.g. senclaw cp report.txt build:in/ or senclaw cp build:out/result.json .")
		return ExitUsage
	case remoteSrc:
		n, err := copyOut(ctx, c, sbSrc, pSrc, hostPath(dir, dst))
		if err != nil {
			say(io.Err, "senclaw cp: %v", err)
			return exitFor(err)
		}
		say(io.Err, "copied %d file(s) from %s", n, src)
	default:
		n, err := copyIn(ctx, c, hostPath(dir, src), sbDst, pDst)
		if err != nil {
			say(io.Err, "senclaw cp: %v", err)
			return exitFor(err)
		}
		say(io.Err, "copied %d file(s) into %s", n, dst)
	}
	return 0
}

// remotePath splits "SANDBOX:PATH"; a host path with a colon in it has a
// slash before the colon ("./a:b").
func remotePath(s string) (sandbox, p string, ok bool) {
	sb, p, ok := strings.Cut(s, ":")
	if !ok || sb == "" || strings.ContainsAny(sb, `/\`) {
		return "", "", false
	}
	return sb, p, true
}

func hostPath(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// copyOut copies a sandbox's file or folder to dst on this machine (into
// dst when it is a folder).
func copyOut(ctx context.Context, c *client.Client, id, src, dst string) (int, error) {
	parent, name := filepath.Dir(dst), filepath.Base(dst)
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		parent, name = dst, path.Base(path.Clean("/"+src))
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	return copyOutTo(ctx, c, id, src, root, name)
}

// copyOutTo copies the sandbox's src to name in root.
func copyOutTo(ctx context.Context, c *client.Client, id, src string, root *os.Root, name string) (int, error) {
	if fi, err := root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return 0, fmt.Errorf("%s is a symbolic link on this machine's side (a sandbox may have put it there); cp writes through no link: remove it, or copy elsewhere", filepath.Join(root.Name(), name))
	}
	entries, err := c.Files(ctx, id, src)
	if err == nil {
		// A folder: its tree, file by file.
		if err := root.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return 0, err
		}
		if fi, err := root.Lstat(name); err != nil || !fi.IsDir() {
			return 0, fmt.Errorf("%s on this machine is not a folder", filepath.Join(root.Name(), name))
		}
		n := 0
		for _, e := range entries {
			if e.Link != "" {
				continue // the file API does not follow links; neither does cp
			}
			k, err := copyOutTo(ctx, c, id, path.Join(src, e.Name), root, filepath.Join(name, e.Name))
			n += k
			if err != nil {
				return n, err
			}
		}
		return n, nil
	}
	fc, ferr := c.ReadFile(ctx, id, src, true)
	if ferr != nil {
		return 0, ferr
	}
	data, err := base64.StdEncoding.DecodeString(fc.Content)
	if err != nil {
		return 0, fmt.Errorf("reading %s:%s: %w", id, src, err)
	}
	if int64(len(data)) < fc.Size {
		return 0, fmt.Errorf("%s:%s is %d bytes, more than the file API reads at once (%d): mount a folder for large files (--mount)", id, src, fc.Size, app.MaxFileRead)
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|noFollow, 0o644)
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w (cp writes through no link and into no FIFO)", filepath.Join(root.Name(), name), err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s on this machine is not a regular file", filepath.Join(root.Name(), name))
	}
	if err := f.Truncate(0); err != nil {
		return 0, err
	}
	if _, err := f.Write(data); err != nil {
		return 0, err
	}
	return 1, f.Close()
}

// copyIn copies a file or folder of this machine into a sandbox (into dst
// when it names a folder, with a trailing slash or an existing one).
func copyIn(ctx context.Context, c *client.Client, src, id, dst string) (int, error) {
	if strings.HasSuffix(dst, "/") || dst == "" || dst == "." {
		dst = path.Join(dst, filepath.Base(src))
	} else if _, err := c.Files(ctx, id, dst); err == nil {
		dst = path.Join(dst, filepath.Base(src))
	}
	root, err := os.OpenRoot(filepath.Dir(src))
	if err != nil {
		return 0, err
	}
	defer root.Close()
	return copyInTo(ctx, c, root, filepath.Base(src), id, dst)
}

// copyInTo copies name in root to exactly dst in the sandbox.
func copyInTo(ctx context.Context, c *client.Client, root *os.Root, name, id, dst string) (int, error) {
	where := filepath.Join(root.Name(), name)
	f, err := root.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, syscall.ELOOP) {
		return 0, fmt.Errorf("%s is a symbolic link; copy what it points to instead", where)
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	switch {
	case fi.IsDir():
		if err := c.Mkdir(ctx, id, dst); err != nil {
			return 0, err
		}
		entries, err := f.ReadDir(-1)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, e := range entries {
			k, err := copyInTo(ctx, c, root, filepath.Join(name, e.Name()), id, path.Join(dst, e.Name()))
			n += k
			if err != nil {
				return n, err
			}
		}
		return n, nil
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("%s is not a regular file or folder", where)
	case fi.Size() > app.MaxFileWrite:
		return 0, fmt.Errorf("%s is %d bytes, more than the file API writes at once (%d): mount its folder instead (--mount)", where, fi.Size(), app.MaxFileWrite)
	}
	data, err := io.ReadAll(io.LimitReader(f, app.MaxFileWrite+1))
	if err != nil {
		return 0, err
	}
	if int64(len(data)) > app.MaxFileWrite {
		return 0, fmt.Errorf("%s grew past %d bytes while it was read", where, app.MaxFileWrite)
	}
	if _, err := c.WriteFile(ctx, id, dst, base64.StdEncoding.EncodeToString(data), "base64"); err != nil {
		return 0, err
	}
	return 1, nil
}
