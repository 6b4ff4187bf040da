package bwrap

import (
	"crypto/rand"
	"encoding/hex"
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

// kindOf says what p is for a mask. Stat follows links, so a symlink is
// masked by what it points to in the sandbox's view of the same path.
func kindOf(p string) PathKind {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Absent
	case err != nil:
		// Unknown: mask it as a directory; if that is wrong bwrap fails
		// and nothing runs.
		return Dir
	case fi.IsDir():
		return Dir
	default:
		return File
	}
}

// randomID returns 16 random hex digits.
func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
