//go:build unix

package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ownExecutable refuses p unless it and every folder above it belong to
// root or this user and no one else may write them (a folder with the
// sticky bit, root's, as /tmp, excepted: others cannot rename what is in
// it), so that no other user can put another program in its place.
func ownExecutable(p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	euid := uint32(os.Geteuid())
	for q := real; ; q = filepath.Dir(q) {
		fi, err := os.Lstat(q)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner to check", q)
		}
		sticky := fi.IsDir() && fi.Mode()&os.ModeSticky != 0 && st.Uid == 0
		switch {
		case st.Uid != 0 && st.Uid != euid:
			return fmt.Errorf("%s belongs to uid %d", q, st.Uid)
		case fi.Mode().Perm()&0o022 != 0 && !sticky:
			return fmt.Errorf("others may write %s (mode %04o)", q, fi.Mode().Perm())
		}
		if q == filepath.Dir(q) {
			return nil
		}
	}
}
