package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A damaged file is said, never crashed on. bbolt trusts its pages: a
// file whose meta pages are whole but whose other pages are garbage makes
// it panic (a bad freelist page on open, a bad leaf in the first read),
// and a page pointing past the mapping faults. Open therefore checks an
// existing file read-only first (tx.Check, with faults turned into
// panics), recovers from what bbolt does on the way, and answers a
// *DamagedError naming what is wrong; the file is copied aside before
// anything else may touch it.

// DamagedError is a store file that is not a whole database. Nothing was
// written to it.
type DamagedError struct {
	// Path is the damaged file; Kept is the copy of it kept aside ("" if
	// none could be made).
	Path, Kept string
	// Reason is what is wrong, in bbolt's words.
	Reason string
}

func (e *DamagedError) Error() string {
	s := fmt.Sprintf("store damaged: %s is not a whole database (%s)", e.Path, e.Reason)
	if e.Kept != "" {
		s += "; a copy of it is kept at " + e.Kept
	}
	return s + "; `senclaw doctor --repair` copies what can be read into a new store and keeps the damaged one"
}

// maxProblems bounds how many of tx.Check's findings are kept.
const maxProblems = 5

// damaged makes the DamagedError of path, keeping a copy of it aside.
func damaged(path, reason string) error {
	kept, err := keepAside(path)
	if err != nil {
		reason += "; no copy could be kept aside: " + err.Error()
	}
	return &DamagedError{Path: path, Kept: kept, Reason: reason}
}

// guard runs fn with memory faults turned into panics, and turns a panic
// into a reason.
func guard(fn func() error) (reason string, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			reason = fmt.Sprint(r)
		}
	}()
	return "", fn()
}

// verify opens an existing file read-only and checks every page. It
// returns the reason the file is damaged ("" when it is whole), or an
// error that is not damage (the lock held, no permission).
func verify(path string, timeout time.Duration) (string, error) {
	var problems []string
	reason, err := guard(func() error {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
		if err != nil {
			return err
		}
		defer db.Close()
		// Under the shared lock: no engine writes while the pages are read.
		if why := checkPages(path, 0); why != "" {
			problems = []string{why}
			return nil
		}
		problems = check(db)
		return nil
	})
	switch {
	case reason != "":
		return reason, nil
	case errors.Is(err, bolterrors.ErrTimeout):
		return "", fmt.Errorf("opening %s: %w", path, ErrLocked)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("opening %s: %w", path, err)
	case err != nil:
		return err.Error(), nil // invalid, checksum, version, size: the file's own fault
	}
	return strings.Join(problems, "; "), nil
}

// check runs bbolt's consistency check and the schema read in one read
// transaction; it returns up to maxProblems findings.
func check(db *bolt.DB) []string {
	var problems []string
	reason, err := guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			n := 0
			for err := range tx.Check() {
				if n++; n <= maxProblems {
					problems = append(problems, err.Error())
				}
			}
			if n > maxProblems {
				problems = append(problems, fmt.Sprintf("and %d more", n-maxProblems))
			}
			if len(problems) == 0 && tx.Bucket(bucketMeta) != nil {
				readVersion(tx)
			}
			return nil
		})
	})
	if reason != "" {
		problems = append(problems, reason)
	}
	if err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}

// Check checks the open store's pages and runs bbolt's consistency check
// on it, and returns what they found (nothing when the file is whole).
func (s *Store) Check() []string {
	why := ""
	_ = s.db.View(func(tx *bolt.Tx) error {
		why = checkPages(s.db.Path(), uint64(tx.ID()))
		return nil
	})
	if why != "" {
		return []string{why}
	}
	return check(s.db)
}

// keepAside copies path to path.damaged-HASH (the first 12 hex digits of
// its SHA-256), unless that copy is there already: a copy is never
// overwritten, and a daemon restarted on the same damaged file keeps one.
func keepAside(path string) (string, error) {
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	h := sha256.New()
	if _, err := io.Copy(h, src); err != nil {
		return "", err
	}
	kept := path + ".damaged-" + hex.EncodeToString(h.Sum(nil))[:12]
	if _, err := os.Lstat(kept); err == nil {
		return kept, nil
	}
	if err := copyNew(src, kept); err != nil {
		return "", err
	}
	return kept, nil
}

// copyNew copies src (from its start) to a new file dst: written under a
// temporary name, then linked to dst, which fails rather than replace a
// file already there.
func copyNew(src *os.File, dst string) error {
	tmp := dst + ".tmp"
	_ = os.Remove(tmp)
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	_, err = io.Copy(out, io.NewSectionReader(src, 0, 1<<62))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp, dst)
}
