package bwrap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/backends"
)

// DetectHost looks at the disk for what Args needs: which system roots
// exist and which are symbolic links, the install prefixes of the
// interpreters on the sandbox's PATH, and what each hidden and masked path
// is.
func DetectHost(spec *backends.Spec) Host { return detectHost(spec, &backends.RuntimeScan{}) }

// detectHost is DetectHost with the backend's scan of the PATH, which
// remembers the directories it read.
func detectHost(spec *backends.Spec, scan *backends.RuntimeScan) Host {
	h := Host{Hidden: map[string]PathKind{}}
	if spec.FsMode != backends.FsOpen {
		h.Prefixes = installPrefixes(envPath(spec.Env), "/opt", scan)
	}
	roots := backends.SystemRoots()
	h.Roots = make([]Root, 0, len(roots))
	for _, p := range roots {
		var st unix.Stat_t
		if statPath(p, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		r := Root{Path: p}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			r.Symlink = target
		}
		h.Roots = append(h.Roots, r)
	}
	for _, p := range spec.Hidden {
		h.Hidden[p] = kindOf(p)
	}
	if len(spec.Masked) > 0 {
		h.Masked = map[string]PathKind{}
		for _, p := range spec.Masked {
			h.Masked[p] = kindOf(p)
		}
	}
	return h
}

// prefixesMaxAge is how old the scan installPrefixes reads may be: an
// interpreter installed under /opt a moment ago may miss its prefix for
// that long (it fails to start, nothing more is readable).
const prefixesMaxAge = time.Second

// installPrefixes finds the interpreters (backends.RuntimeOfFile) in the
// directories of pathList and returns the install prefixes under opt
// (/opt) of the files they lead to: opt/<name>, sorted, at most
// MaxPrefixes.
func installPrefixes(pathList, opt string, scan *backends.RuntimeScan) []string {
	var out []string
	for _, f := range scan.FilesWithin([]string{backends.RuntimePython, backends.RuntimeNode}, filepath.SplitList(pathList), prefixesMaxAge) {
		rest, ok := strings.CutPrefix(f, opt+"/")
		if !ok {
			continue
		}
		prefix := opt + "/" + strings.SplitN(rest, "/", 2)[0]
		if !slices.Contains(out, prefix) && len(out) < MaxPrefixes {
			out = append(out, prefix)
		}
	}
	return out
}

// envPath is the PATH of env ("" when it has none).
func envPath(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v
		}
	}
	return ""
}

// kindOf says what p is for a mask. Stat follows links, so a symlink is
// masked by what it points to in the sandbox's view of the same path.
func kindOf(p string) PathKind {
	var st unix.Stat_t
	err := statPath(p, &st, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Absent
	case err != nil:
		// Unknown: mask it as a directory; if that is wrong bwrap fails
		// and nothing runs.
		return Dir
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return Dir
	default:
		return File
	}
}

// statPath is os.Stat, or os.Lstat with flags AT_SYMLINK_NOFOLLOW,
// into st, which the caller keeps: every run's bwrap looks at a dozen
// paths, and os makes a FileInfo or a PathError of each.
func statPath(p string, st *unix.Stat_t, flags int) error {
	for {
		if err := unix.Fstatat(unix.AT_FDCWD, p, st, flags); err != unix.EINTR {
			return err
		}
	}
}
