// Package rundir makes and checks the engine's runtime dir, a folder only its user may enter.
//
// The runtime dir holds the API socket, the daemon lock and info.json.
// Without XDG_RUNTIME_DIR it is $TMPDIR/senclaw-<uid>, in a folder every
// user may write, so another user could make it first, with links in it,
// and wait for the engine's socket and files. As ssh-agent, tmux and X11
// do, the engine makes the folder exclusively (mode 0700) and refuses one
// that is not a directory of its own uid with no group or other bits;
// then it works through the folder's descriptor only: the lock, info.json
// and the socket are opened, written and bound relative to it, following
// no link. Clients make the same check before they read info.json or
// dial the socket.
package rundir

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
)

// ErrLocked is Lock's answer when another daemon holds the lock.
var ErrLocked = errors.New("the daemon lock is held")

// UnsafeError is a runtime dir (or a file in it) that this user must not
// trust: not a directory, another user's, or open to others.
type UnsafeError struct {
	Path string
	// What is "runtime dir" or the file's role ("the daemon's info file").
	What string
	// UID is its owner, Mode its permission bits, Link whether it is a
	// symbolic link, NotDir whether it is something else than a folder.
	UID    int
	Mode   os.FileMode
	Link   bool
	NotDir bool
	// Want is the uid it should belong to.
	Want int
}

func (e *UnsafeError) Error() string {
	var found string
	switch {
	case e.Link:
		found = "is a symbolic link"
	case e.NotDir:
		found = fmt.Sprintf("is not a folder (mode %v)", e.Mode)
	default:
		found = fmt.Sprintf("is owned by %s with mode %04o", UserName(e.UID), e.Mode.Perm())
	}
	want := fmt.Sprintf("a folder of %s with mode 0700", UserName(e.Want))
	if e.What != "runtime dir" {
		want = fmt.Sprintf("a file of %s that no one else may write", UserName(e.Want))
	}
	return fmt.Sprintf("the %s %s %s, not %s: another user could have made it to take the engine's socket and files, "+
		"so senclaw does not use it. Look at what it holds (ls -la %s); if it is not yours, remove it (as root) or set "+
		"XDG_RUNTIME_DIR to a folder of your own; if it is, chmod 0700 it (chown it to yourself first if needed)",
		e.What, e.Path, found, want, e.Path)
}

// UserName is uid with its account name when it has one: "uid 1001
// (alice)".
func UserName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return "uid " + strconv.Itoa(uid)
}
