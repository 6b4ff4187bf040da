package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/safetext"
)

func cpCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cp SRC SANDBOX:DST | SANDBOX:SRC DST", Short: "copy files and folders into or out of a sandbox",
		Long: "Through the engine's file API: paths stay inside the sandbox, read-only mounts stay read-only, links are not followed. Files are streamed both ways, of any size the sandbox's disk quota allows, folders file by file; at a terminal a large file's progress is shown. (A sandbox on another machine's engine takes files of up to 64 MiB and gives up to 2 MiB.)",
		Example: examples(
			"senclaw cp data.csv build:in/",
			"senclaw cp build:out/report.json .",
			"senclaw cp -- ./src web:app",
		),
	}
	cmd.Flags().SetInterspersed(false)
	cmd.RunE = x.action(func(args []string) int {
		if len(args) != 2 {
			fmt.Fprintln(x.io.Err, "senclaw cp: give a source and a destination, one of them SANDBOX:PATH")
			return ExitUsage
		}
		wd, _ := os.Getwd()
		io := x.io
		if f, ok := x.env.Stderr.(*os.File); ok && isTerminal(f) {
			io.Progress = x.io.Err
		}
		return x.withClient(func(c *client.Client) int { return copyFiles(x.ctx, c, args[0], args[1], wd, io) })
	})
	return cmd
}

// copyFiles executes `senclaw cp SRC SANDBOX:DST` and `senclaw cp SANDBOX:SRC
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
func copyFiles(ctx context.Context, c *client.Client, src, dst, dir string, io streams) int {
	sbSrc, pSrc, remoteSrc := remotePath(src)
	sbDst, pDst, remoteDst := remotePath(dst)
	switch {
	case remoteSrc == remoteDst:
		say(io.Err, "senclaw cp: give one side as SANDBOX:PATH and the other as a path on this machine, e.g. senclaw cp report.txt build:in/ or senclaw cp build:out/result.json .")
		return ExitUsage
	case remoteSrc:
		n, err := copyOut(ctx, c, sbSrc, pSrc, hostPath(dir, dst), io.Progress)
		if err != nil {
			say(io.Err, "senclaw cp: %v", err)
			return exitFor(err)
		}
		say(io.Err, "copied %d file(s) from %s", n, src)
	default:
		n, err := copyIn(ctx, c, hostPath(dir, src), sbDst, pDst, io.Progress)
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
func copyOut(ctx context.Context, c *client.Client, id, src, dst string, progress io.Writer) (int, error) {
	parent, name := filepath.Dir(dst), filepath.Base(dst)
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		parent, name = dst, path.Base(path.Clean("/"+src))
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	return copyOutTo(ctx, c, id, src, root, name, progress)
}

// copyOutTo copies the sandbox's src to name in root.
func copyOutTo(ctx context.Context, c *client.Client, id, src string, root *os.Root, name string, progress io.Writer) (int, error) {
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
			k, err := copyOutTo(ctx, c, id, path.Join(src, e.Name), root, filepath.Join(name, e.Name), progress)
			n += k
			if err != nil {
				return n, err
			}
		}
		return n, nil
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
	m := &meter{w: f, to: progress, name: id + ":" + src}
	if _, err := c.ReadFileTo(ctx, id, src, m, m.start); err != nil {
		return 0, err
	}
	m.done()
	return 1, f.Close()
}

// copyIn copies a file or folder of this machine into a sandbox (into dst
// when it names a folder, with a trailing slash or an existing one).
func copyIn(ctx context.Context, c *client.Client, src, id, dst string, progress io.Writer) (int, error) {
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
	return copyInTo(ctx, c, root, filepath.Base(src), id, dst, progress)
}

// copyInTo copies name in root to exactly dst in the sandbox.
func copyInTo(ctx context.Context, c *client.Client, root *os.Root, name, id, dst string, progress io.Writer) (int, error) {
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
			k, err := copyInTo(ctx, c, root, filepath.Join(name, e.Name()), id, path.Join(dst, e.Name()), progress)
			n += k
			if err != nil {
				return n, err
			}
		}
		return n, nil
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("%s is not a regular file or folder", where)
	}
	m := &meter{to: progress, name: where}
	m.start(fi.Size())
	// What was stat'ed is what is sent: a file that grows meanwhile is
	// cut at that size, as the Content-Length says.
	if _, err := c.WriteFileFrom(ctx, id, dst, io.TeeReader(io.LimitReader(f, fi.Size()), m), fi.Size()); err != nil {
		return 0, err
	}
	m.done()
	return 1, nil
}

// meterFrom is the size from which a copy's progress is shown.
const meterFrom = 8 << 20

// meter writes to w (when set), counting the bytes, and at a terminal
// (to) shows a large file's progress on one line, redrawn at most every
// 200 ms.
type meter struct {
	w          io.Writer
	to         io.Writer
	name       string
	size, sent int64
	shown      time.Time
	on         bool
}

func (m *meter) start(size int64) {
	m.size, m.on = size, m.to != nil && size >= meterFrom
}

func (m *meter) Write(p []byte) (int, error) {
	n := len(p)
	if m.w != nil {
		var err error
		if n, err = m.w.Write(p); err != nil {
			return n, err
		}
	}
	m.sent += int64(n)
	if m.on && time.Since(m.shown) > 200*time.Millisecond {
		m.shown = time.Now()
		fmt.Fprintf(m.to, "\r%s: %.1f of %.1f MiB (%d%%)", safetext.Escape(m.name), float64(m.sent)/(1<<20), float64(m.size)/(1<<20), m.sent*100/max(m.size, 1))
	}
	return n, nil
}

// done ends the progress line.
func (m *meter) done() {
	if m.on {
		fmt.Fprintf(m.to, "\r%s: %.1f MiB\x1b[K\n", safetext.Escape(m.name), float64(m.sent)/(1<<20))
	}
}
