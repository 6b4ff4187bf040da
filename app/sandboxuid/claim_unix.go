//go:build unix

package sandboxuid

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ClaimsDir is where root engines claim their ranges on this machine: a
// file per block (BlockSize ids) a range touches, naming the data dir of
// the engine that owns it. A claim lasts while that engine is stopped and
// across boots, since its sandboxes keep their uids and files: the block
// is free again only once the engine gives it up (Forget) or its data dir
// is gone. While the engine runs it also holds the file's lock.
const ClaimsDir = "/var/lib/senclaw-uids"

// Claim is a range this engine holds on this machine: no other engine
// claims a block of it while it is held.
type Claim struct {
	files []*os.File
}

// ClaimedError says that another engine holds a block of a range.
type ClaimedError struct {
	Range Range
	// By says who: the data dir its file names, and whether its engine
	// runs now.
	By string
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("the uids %s are another SenClaw engine's (%s)", e.Range, e.By)
}

// ownerPrefix starts the line of a claim file that names its owner.
const ownerPrefix = "data dir "

// ClaimRange claims every block r touches in dir for the engine whose
// data dir is who: each block's file is locked (flock, which the kernel
// lets go when the engine ends) and names who. A block another engine
// runs with, or that names another data dir that still exists, is a
// *ClaimedError (so is one another Engine of this process holds); nothing
// is held then.
func ClaimRange(dir string, r Range, who string) (*Claim, error) {
	if err := ownDir(dir); err != nil {
		return nil, err
	}
	c := &Claim{}
	for b := range blocks(r) {
		f, err := lockBlock(dir, b)
		if err == nil {
			if by := foreignOwner(f, who); by != "" {
				f.Close()
				err = &ClaimedError{Range: b, By: by + ", whose engine is stopped; its sandboxes keep these uids"}
			}
		}
		if err != nil {
			c.Release()
			return nil, err
		}
		if owner, _ := ownerOf(f); owner != who {
			err := f.Truncate(0)
			if err == nil {
				_, err = f.WriteAt([]byte(ownerPrefix+who+"\n"), 0)
			}
			if err != nil {
				f.Close()
				c.Release()
				return nil, fmt.Errorf("claiming the uids %s: %w", b, err)
			}
		}
		c.files = append(c.files, f)
	}
	return c, nil
}

// Free reports whether r could be claimed by who now, changing nothing:
// "" when it could, else who holds a block of it.
func Free(dir string, r Range, who string) string {
	for b := range blocks(r) {
		f, err := lockBlock(dir, b)
		if err != nil {
			var ce *ClaimedError
			if errors.As(err, &ce) {
				return ce.By
			}
			continue // no claims folder yet: nothing is claimed
		}
		by := foreignOwner(f, who)
		f.Close()
		if by != "" {
			return by
		}
	}
	return ""
}

// Forget gives up the blocks of r that who owns and no engine runs with
// (its sandboxes have moved off them): other engines may claim them.
func Forget(dir string, r Range, who string) error {
	for b := range blocks(r) {
		f, err := lockBlock(dir, b)
		if err != nil {
			var ce *ClaimedError
			if errors.As(err, &ce) || errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		if owner, _ := ownerOf(f); owner == who {
			err = f.Truncate(0)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("giving up the uids %s: %w", b, err)
		}
	}
	return nil
}

// Release lets the running engine's hold go; the claim itself lasts.
func (c *Claim) Release() {
	if c == nil {
		return
	}
	for _, f := range c.files {
		f.Close() // the lock goes with the last descriptor
	}
	c.files = nil
}

// blocks yields the BlockSize-aligned blocks r touches.
func blocks(r Range) func(yield func(Range) bool) {
	return func(yield func(Range) bool) {
		for b := uint64(r.First) / BlockSize * BlockSize; b <= uint64(r.Last); b += BlockSize {
			if !yield(Range{First: uint32(b), Last: uint32(b + BlockSize - 1)}) {
				return
			}
		}
	}
}

// lockBlock opens (making it) and locks the file of block b: a block an
// engine runs with now is a *ClaimedError.
func lockBlock(dir string, b Range) (*os.File, error) {
	name := filepath.Join(dir, strconv.FormatUint(uint64(b.First), 10)+".lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("claiming the uids %s: %w", b, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		owner, _ := ownerOf(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &ClaimedError{Range: b, By: ownerPrefix + owner + ", whose engine runs now"}
		}
		return nil, fmt.Errorf("claiming the uids %s: %w", b, err)
	}
	return f, nil
}

// ownerOf reads the data dir a claim file names ("" for none).
func ownerOf(f *os.File) (string, error) {
	buf := make([]byte, 4096)
	n, err := f.ReadAt(buf, 0)
	if n == 0 && err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		if owner, ok := strings.CutPrefix(line, ownerPrefix); ok {
			return owner, nil
		}
	}
	return "", nil
}

// foreignOwner says who else owns the locked block f ("" when it is
// free for who): a data dir other than who's that still exists.
func foreignOwner(f *os.File, who string) string {
	owner, _ := ownerOf(f)
	if owner == "" || owner == who {
		return ""
	}
	if _, err := os.Stat(owner); errors.Is(err, os.ErrNotExist) {
		return "" // that engine is gone, and its sandboxes with it
	}
	return ownerPrefix + owner
}

// ownDir makes dir (0700) and checks it is a directory of this process's
// uid that no one else may write: a lock file another user could replace
// would let them take or deny ranges.
func ownDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making the uid claims folder: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the uid claims folder: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("the uid claims folder %s is not a directory of uid %d that only it may write (it is %v): remove it, and start the engine again", dir, os.Geteuid(), fi.Mode())
	}
	return nil
}
