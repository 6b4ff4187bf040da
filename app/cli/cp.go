package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
)

// Copy executes `senclaw cp SRC SANDBOX:DST` and `senclaw cp SANDBOX:SRC
// DST`: files and folders in and out of a sandbox through the engine's
// file API, which keeps every path inside the sandbox and honours its
// read-only mounts. dir is the caller's working directory, for relative
// host paths.
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
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, path.Base(path.Clean("/"+src)))
	}
	entries, err := c.Files(ctx, id, src)
	if err == nil {
		// A folder: its tree, file by file.
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return 0, err
		}
		n := 0
		for _, e := range entries {
			if e.Link != "" {
				continue // the file API does not follow links; neither does cp
			}
			k, err := copyOut(ctx, c, id, path.Join(src, e.Name), filepath.Join(dst, e.Name))
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
	return 1, os.WriteFile(dst, data, 0o644)
}

// copyIn copies a file or folder of this machine into a sandbox (into dst
// when it names a folder, with a trailing slash or an existing one).
func copyIn(ctx context.Context, c *client.Client, src, id, dst string) (int, error) {
	if strings.HasSuffix(dst, "/") || dst == "" || dst == "." {
		dst = path.Join(dst, filepath.Base(src))
	} else if _, err := c.Files(ctx, id, dst); err == nil {
		dst = path.Join(dst, filepath.Base(src))
	}
	return copyInTo(ctx, c, src, id, dst)
}

// copyInTo copies src to exactly dst in the sandbox.
func copyInTo(ctx context.Context, c *client.Client, src, id, dst string) (int, error) {
	fi, err := os.Lstat(src)
	if err != nil {
		return 0, err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return 0, fmt.Errorf("%s is a symbolic link; copy what it points to instead", src)
	case fi.IsDir():
		if err := c.Mkdir(ctx, id, dst); err != nil {
			return 0, err
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, e := range entries {
			k, err := copyInTo(ctx, c, filepath.Join(src, e.Name()), id, path.Join(dst, e.Name()))
			n += k
			if err != nil {
				return n, err
			}
		}
		return n, nil
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("%s is not a regular file or folder", src)
	case fi.Size() > app.MaxFileWrite:
		return 0, fmt.Errorf("%s is %d bytes, more than the file API writes at once (%d): mount its folder instead (--mount)", src, fi.Size(), app.MaxFileWrite)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return 0, err
	}
	if _, err := c.WriteFile(ctx, id, dst, base64.StdEncoding.EncodeToString(data), "base64"); err != nil {
		return 0, err
	}
	return 1, nil
}
