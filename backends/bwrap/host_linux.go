package bwrap

import (
	"errors"
	"io/fs"
	"os"

	"github.com/senclaw/sandbox/backends"
)

// DetectHost looks at the disk for what Args needs: which system roots
// exist and which are symbolic links, and what each hidden path is.
func DetectHost(spec *backends.Spec) Host {
	h := Host{Hidden: map[string]PathKind{}}
	for _, p := range SystemRoots() {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		r := Root{Path: p}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			r.Symlink = target
		}
		h.Roots = append(h.Roots, r)
	}
	for _, p := range spec.Hidden {
		// Stat follows links, so a hidden symlink masks what it points to
		// in the sandbox's view of the same path.
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			h.Hidden[p] = Absent
		case err != nil:
			// Unknown: mask it as a directory; if that is wrong bwrap fails
			// and nothing runs.
			h.Hidden[p] = Dir
		case fi.IsDir():
			h.Hidden[p] = Dir
		default:
			h.Hidden[p] = File
		}
	}
	return h
}
