package unixguard

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/unix"
)

// Handoff is the engine's end of one run's guard: a socket pair whose
// other end the sandbox's first program inherits and sends the listener
// over (Install). Make it with NewHandoff before the sandbox starts, pass
// ChildEnd to it, then Accept.
type Handoff struct {
	*backends.Handoff
	pol Policy
}

// acceptTimeout bounds the wait for the listener when ctx has none.
const acceptTimeout = 30 * time.Second

// NewHandoff prepares the handoff of a run that pol describes.
func NewHandoff(pol Policy) (*Handoff, error) {
	if err := ready(pol); err != nil {
		return nil, err
	}
	h, err := backends.NewHandoff("unixguard")
	if err == nil {
		err = unix.SetsockoptInt(int(h.Mine().Fd()), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
		if err != nil {
			h.Close()
			h.ChildEnd().Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("creating the Unix socket guard's handoff: %w", err)
	}
	return &Handoff{Handoff: h, pol: pol}, nil
}

// ready says why the guard of a run that pol describes cannot run, if it
// cannot.
func ready(pol Policy) error {
	if f := kernel(); !f.ok {
		return fmt.Errorf("the Unix socket guard cannot run here: %s", f.why)
	}
	if pol.User != nil && (int(pol.User.UID) != os.Geteuid() || int(pol.User.GID) != os.Getegid()) && os.Geteuid() != 0 {
		return fmt.Errorf("the Unix socket guard would connect as uid %d, and the engine (uid %d) cannot", pol.User.UID, os.Geteuid())
	}
	return nil
}

// Accept waits for the listener from the sandbox whose outermost process
// (bwrap's child) is root, checks who sent it and what it is, learns the
// sandbox's own places, tells the sandbox to go ahead and supervises the
// listener until the run is over. It gives up when ctx ends or exited is
// closed (the sandbox went away). Any error means the run must be ended.
func (h *Handoff) Accept(ctx context.Context, root int, exited <-chan struct{}) (*Supervisor, error) {
	conn, stop, err := h.Conn(ctx, exited, acceptTimeout)
	if err != nil {
		return nil, fmt.Errorf("receiving the Unix socket guard: %w", err)
	}
	defer stop()
	listener, pid, err := h.receive(conn, root)
	if err != nil {
		return nil, err
	}
	findFor := findPlaces
	if h.pol.Inet != nil {
		findFor = rootOnly // no mount namespace: no places of its own
	}
	pl, err := findFor(pid, h.pol)
	if err != nil {
		unix.Close(listener)
		return nil, err
	}
	s, err := newSupervisor(listener, pid, pl, h.pol) // closes listener on error
	if err != nil {
		pl.close()
		return nil, err
	}
	if _, err := conn.Write([]byte{goAhead}); err != nil {
		s.Close()
		return nil, fmt.Errorf("starting the Unix socket guard: %w", err)
	}
	return s, nil
}

// receive reads the listener and checks it: sent with the hello by a
// process of this sandbox running as the sandbox user, and a seccomp
// listener. It returns the listener and the sender's pid.
func (h *Handoff) receive(conn *net.UnixConn, root int) (int, int, error) {
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*4)+unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return -1, 0, fmt.Errorf("the sandbox did not hand over its Unix socket guard: %w", err)
	}
	msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
	var fds []int
	var cred *unix.Ucred
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		} else if uc, err := unix.ParseUnixCredentials(&m); err == nil {
			cred = uc
		}
	}
	fail := func(format string, a ...any) (int, int, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, 0, fmt.Errorf("refusing the Unix socket guard the sandbox handed over: "+format, a...)
	}
	wantUID := os.Geteuid()
	if h.pol.User != nil {
		wantUID = int(h.pol.User.UID)
	}
	switch {
	case perr != nil || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0:
		return fail("the message was malformed or truncated")
	case !bytes.Equal(buf[:n], []byte(hello)):
		return fail("unexpected message %q", buf[:n])
	case len(fds) != 1:
		return fail("%d descriptors instead of one", len(fds))
	case cred == nil:
		return fail("no sender credentials")
	case int(cred.Uid) != wantUID:
		return fail("sent by uid %d, not the sandbox user %d", cred.Uid, wantUID)
	case !descends(int(cred.Pid), root):
		return fail("sent by pid %d, which is not a process of this sandbox (%d)", cred.Pid, root)
	}
	if link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fds[0])); err != nil || link != "anon_inode:seccomp notify" {
		return fail("the descriptor is %q, not a seccomp listener", link)
	}
	return fds[0], int(cred.Pid), nil
}

// descends reports whether pid is root or one of its descendants, a few
// generations down (the carrier is bwrap's child's child).
func descends(pid, root int) bool {
	for i := 0; i < 8 && pid > 1; i++ {
		if pid == root {
			return true
		}
		pid = parentOf(pid)
	}
	return false
}

// parentOf reads pid's parent from /proc/PID/stat (0 when unknown).
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold anything: the fields
	// after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
