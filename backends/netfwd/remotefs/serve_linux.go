package remotefs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Serve is the helper's side, inside the sandbox: args are the
// workspace's path and the operation with its arguments. It writes the
// answer to stdout and, when it refuses or fails, one line to stderr,
// and returns the exit code.
func Serve(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		return fail(stderr, codeUsage, "usage: --files ROOT OP ARGS...")
	}
	root, err := openRoot(args[0])
	if err != nil {
		return failErr(stderr, err)
	}
	defer unix.Close(root)
	op, rest := args[1], args[2:]
	need := map[string]int{opList: 1, opRead: 2, opWrite: 1, opMkdir: 1, opRm: 1, opUsage: 0}
	if n, ok := need[op]; ok && len(rest) != n || op == opWalk && len(rest) < 2 {
		return fail(stderr, codeUsage, "wrong arguments for "+op)
	}
	if op != opUsage {
		if _, err := parts(rest[0]); err != nil {
			return failErr(stderr, err)
		}
	}
	switch op {
	case opList:
		err = list(root, rest[0], stdout)
	case opRead:
		limit, perr := strconv.ParseInt(rest[1], 10, 64)
		if perr != nil || limit < 0 {
			return fail(stderr, codeUsage, "bad limit")
		}
		err = read(root, rest[0], limit, stdout)
	case opWrite:
		err = write(root, rest[0], stdin, stdout)
	case opMkdir:
		err = mkdirAll(root, rest[0])
	case opRm:
		err = remove(root, rest[0])
	case opUsage:
		var bytes, files int64
		bytes, files, err = usage(root)
		if err == nil {
			fmt.Fprintf(stdout, "%d %d\n", bytes, files)
		}
	case opWalk:
		max, perr := strconv.Atoi(rest[1])
		if perr != nil || max < 1 {
			return fail(stderr, codeUsage, "bad max")
		}
		err = walk(root, rest[0], max, rest[2:], stdout)
	default:
		return fail(stderr, codeUsage, "unknown operation "+strconv.Quote(op))
	}
	if err != nil {
		return failErr(stderr, err)
	}
	return 0
}

type refused struct{ code, msg string }

func (r *refused) Error() string { return r.code + " " + r.msg }

func fail(stderr io.Writer, code, msg string) int {
	fmt.Fprintf(stderr, "%s%s %s\n", errPrefix, code, strings.ReplaceAll(msg, "\n", " "))
	return exitRefused
}

func failErr(stderr io.Writer, err error) int {
	var r *refused
	if errors.As(err, &r) {
		return fail(stderr, r.code, r.msg)
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		switch errno {
		case unix.ENOENT:
			return fail(stderr, codeNotExist, err.Error())
		case unix.ELOOP:
			return fail(stderr, codeLink, err.Error())
		case unix.EACCES, unix.EPERM, unix.EROFS:
			return fail(stderr, codePerm, err.Error())
		case unix.ENOTDIR:
			return fail(stderr, codeNotDir, err.Error())
		}
	}
	return fail(stderr, codeOther, err.Error())
}

var errLink = &refused{codeLink, "a symbolic link is in the way"}

// parts splits a relative path into its names; "." is the root itself.
// What could leave the root is refused.
func parts(rel string) ([]string, error) {
	if rel == "." {
		return nil, nil
	}
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
		return nil, &refused{codeUsage, "not a relative path: " + strconv.Quote(rel)}
	}
	ps := strings.Split(rel, "/")
	for _, p := range ps {
		if p == "" || p == "." || p == ".." {
			return nil, &refused{codeUsage, "not a clean relative path: " + strconv.Quote(rel)}
		}
	}
	return ps, nil
}

// openRoot opens the workspace's directory, refusing a link on its path.
func openRoot(path string) (int, error) {
	if !strings.HasPrefix(path, "/") {
		return -1, &refused{codeUsage, "the root must be absolute"}
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	rel := strings.Trim(path, "/")
	if rel == "" {
		return fd, nil
	}
	defer unix.Close(fd)
	return openDir(fd, strings.Split(rel, "/"))
}

// stepInto opens the directory name in dirfd without following a link.
func stepInto(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		if isLink(dirfd, name) {
			return -1, errLink
		}
	}
	return fd, err
}

func isLink(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// openDir walks the names from dirfd, each a directory that is no link.
func openDir(dirfd int, names []string) (int, error) {
	cur, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, n := range names {
		next, err := stepInto(cur, n)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// parent opens the directory rel's last name is in, and returns that name.
func parent(root int, rel string) (int, string, error) {
	ps, err := parts(rel)
	if err != nil {
		return -1, "", err
	}
	if len(ps) == 0 {
		return -1, "", &refused{codeUsage, "the workspace itself"}
	}
	fd, err := openDir(root, ps[:len(ps)-1])
	return fd, ps[len(ps)-1], err
}

// openFile opens rel with flags, never following a link.
func openFile(root int, rel string, flags int, mode uint32) (*os.File, error) {
	pfd, base, err := parent(root, rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, base, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) && isLink(pfd, base) {
		return nil, errLink
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), base), nil
}

func list(root int, rel string, out io.Writer) error {
	ps, _ := parts(rel)
	if len(ps) > 0 {
		pfd, base, err := parent(root, rel)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		err = unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
		unix.Close(pfd)
		switch {
		case err != nil:
			return err
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return errLink
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return &refused{codeIsNotDir, "not a directory"}
		}
	}
	dfd, err := openDir(root, ps)
	if err != nil {
		return err
	}
	fd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(dfd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	enc := json.NewEncoder(out)
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if e, ok := entryAt(int(f.Fd()), n); ok {
				if err := enc.Encode(e); err != nil {
					return err
				}
			}
		}
		if err == io.EOF || len(names) == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func entryAt(dirfd int, name string) (Entry, bool) {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return Entry{}, false
	}
	e := Entry{Name: name, Size: st.Size, ModMs: st.Mtim.Nano() / 1e6, Kind: "other"}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Kind = "file"
	case unix.S_IFDIR:
		e.Kind = "dir"
	case unix.S_IFLNK:
		e.Kind = "link"
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(dirfd, name, buf); err == nil {
			e.Link = string(buf[:n])
		}
	}
	return e, true
}

func read(root int, rel string, limit int64, out io.Writer) error {
	// A FIFO the sandbox planted must not hang the helper.
	f, err := openFile(root, rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &refused{codeNotRegular, "not a regular file"}
	}
	if fi.Size() > limit {
		return &refused{codeTooBig, fmt.Sprintf("%d %d", fi.Size(), limit)}
	}
	n, err := io.Copy(out, io.LimitReader(f, limit+1))
	if err != nil {
		return err
	}
	if n > limit {
		return &refused{codeGrew, strconv.FormatInt(limit, 10)}
	}
	return nil
}

func write(root int, rel string, in io.Reader, out io.Writer) error {
	ps, _ := parts(rel)
	if len(ps) == 0 {
		return &refused{codeUsage, "the workspace itself is not a file"}
	}
	if len(ps) > 1 {
		if err := mkdirAll(root, strings.Join(ps[:len(ps)-1], "/")); err != nil {
			return err
		}
	}
	f, err := openFile(root, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return &refused{codeNotRegular, "not a regular file"}
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if p, ok := in.(*os.File); ok {
		// The pipe from the daemon, widened: fewer turns between it
		// and this process (a failure changes nothing).
		_, _ = unix.FcntlInt(p.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	}
	// Large writes come in large pieces: fewer system calls.
	n, err := io.CopyBuffer(f, onlyReader{in}, make([]byte, 1<<20))
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintln(out, n)
	return nil
}

func mkdirAll(root int, rel string) error {
	ps, err := parts(rel)
	if err != nil {
		return err
	}
	cur, err := unix.FcntlInt(uintptr(root), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { unix.Close(cur) }()
	for _, p := range ps {
		if err := unix.Mkdirat(cur, p, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		next, err := stepInto(cur, p)
		if err != nil {
			return err
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

func remove(root int, rel string) error {
	pfd, base, err := parent(root, rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return removeAt(pfd, base)
}

// removeAt removes name in dirfd and what it holds; links are removed,
// never followed.
func removeAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	for range 3 {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), name)
		names, err := f.Readdirnames(-1)
		if err != nil && err != io.EOF {
			f.Close()
			return err
		}
		for _, n := range names {
			if err := removeAt(int(f.Fd()), n); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
		if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return unix.ENOTEMPTY
}

// What each's callback asks for next.
const (
	walkOn = iota
	walkSkip
	walkStop
)

// each calls fn for every entry below dirfd (path relative to the walk's
// start), depth first, staying on dev and never following a link; fn
// says whether to go on, to skip what a directory holds, or to stop. It
// returns false when fn stopped it.
func each(dirfd int, prefix string, dev uint64, fn func(path string, st *unix.Stat_t) int) (bool, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, err
	}
	f := os.NewFile(uintptr(fd), prefix)
	defer f.Close()
	for {
		names, rerr := f.Readdirnames(256)
		for _, n := range names {
			var st unix.Stat_t
			if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			p := n
			if prefix != "" {
				p = prefix + "/" + n
			}
			next := fn(p, &st)
			if next == walkStop {
				return false, nil
			}
			if next == walkOn && st.Mode&unix.S_IFMT == unix.S_IFDIR && uint64(st.Dev) == dev {
				sub, err := unix.Openat(fd, n, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue
				}
				more, _ := each(sub, p, dev, fn)
				unix.Close(sub)
				if !more {
					return false, nil
				}
			}
		}
		if rerr == io.EOF || len(names) == 0 {
			return true, nil
		}
		if rerr != nil {
			return true, rerr
		}
	}
}

// usage sums the workspace's blocks and entries, its own filesystem only
// (a mount's copy is a volume of its own, outside the quota).
func usage(root int) (int64, int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(root, &st); err != nil {
		return 0, 0, err
	}
	var bytes, files int64
	_, err := each(root, "", uint64(st.Dev), func(_ string, st *unix.Stat_t) int {
		bytes += st.Blocks * 512
		files++
		return walkOn
	})
	return bytes, files, err
}

func walk(root int, rel string, max int, skip []string, out io.Writer) error {
	ps, _ := parts(rel)
	dfd, err := openDir(root, ps)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	n := 0
	complete, err := each(dfd, "", uint64(st.Dev), func(p string, st *unix.Stat_t) int {
		if !strings.Contains(p, "/") && slices.Contains(skip, p) {
			return walkSkip
		}
		if n == max {
			return walkStop
		}
		n++
		_ = enc.Encode(WalkEntry{Path: p, Dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, Size: st.Size, ModNs: st.Mtim.Nano()})
		return walkOn
	})
	if !complete {
		fmt.Fprintln(out, "truncated")
	}
	return err
}

// onlyReader hides a reader's WriterTo, so that CopyBuffer uses its
// buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
