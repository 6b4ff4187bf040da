//go:build unix

package api

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/senclaw/sandbox/app/rundir"
	"golang.org/x/sys/unix"
)

// checkTokenPlace refuses the token's folder when it is a link, another
// user's, or open to others' writes, and says whether the token file is
// to be replaced: others may read it, or it is not the user's plain
// file. A missing folder or file is fine: it is made.
func checkTokenPlace(path string) (replace bool, err error) {
	euid := os.Geteuid()
	dir := filepath.Dir(path)
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err == nil {
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return false, fmt.Errorf("the config dir %s, which holds the API token, is not a folder (a link or a file): another user could have made it to hand the engine a token of theirs, so senclaw does not use it; look at it (ls -la %s) and remove it if you did not make it", dir, dir)
		case int(st.Uid) != euid:
			return false, fmt.Errorf("the config dir %s, which holds the API token, belongs to %s, not to you (%s): its owner could read or replace the token, so senclaw does not use it; if you did not make it, remove it (as root), else chown it to yourself and chmod 0700 it", dir, rundir.UserName(int(st.Uid)), rundir.UserName(euid))
		case st.Mode&0o022 != 0:
			return false, fmt.Errorf("others may change the config dir %s (mode %04o), which holds the API token: they could replace it, so senclaw does not use it; chmod 0700 %s, then start again", dir, st.Mode&0o7777, dir)
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return false, fmt.Errorf("checking the config dir %s: %w", dir, err)
	}
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("checking the API token %s: %w", path, err)
	}
	// The folder is the user's own and no one else may write in it: a
	// token file that is not the user's plain private file is replaced
	// (the rename takes a link's place, not its target's).
	return st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != euid || st.Mode&0o077 != 0, nil
}
