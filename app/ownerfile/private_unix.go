//go:build unix

package ownerfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// noFollow opens a file only if it is not a symbolic link.
const noFollow = syscall.O_NOFOLLOW

// checkPrivate refuses a file that is not a regular file of this
// process's user with no access for group or others.
func checkPrivate(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return errors.New("is not a regular file")
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("belongs to uid %d, not to this user (%d)", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("has mode %v: others may read it, so it can no longer keep anything secret", fi.Mode().Perm())
	}
	return nil
}
