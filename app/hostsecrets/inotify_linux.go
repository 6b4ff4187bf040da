package hostsecrets

import (
	"errors"

	"golang.org/x/sys/unix"
)

// inotify is a non-blocking inotify descriptor.
type inotify struct {
	fd  int
	buf []byte
}

// events are the changes of a watched folder's entries that may change
// the list: made, removed, moved, their modes or owners changed, and the
// folder itself moved or removed.
const events = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR

func newInotify() *inotify {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &inotify{fd: fd, buf: make([]byte, 64<<10)}
}

// watch watches dir (again: a folder watched already keeps its watch).
func (in *inotify) watch(dir string) bool {
	_, err := unix.InotifyAddWatch(in.fd, dir, events)
	return err == nil
}

// changed drains the queue and reports whether anything was in it (an
// overflow, or an error reading it, counts as a change).
func (in *inotify) changed() bool {
	any := false
	for {
		n, err := unix.Read(in.fd, in.buf)
		switch {
		case n > 0:
			any = true
			continue
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return any
		}
		return true
	}
}

func (in *inotify) close() { unix.Close(in.fd) }
