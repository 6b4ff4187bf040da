package unixguard

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hello is what the carrier sends with the listener, and goAhead the
// engine's answer once it supervises it.
const (
	hello   = "senclaw-unixguard/1"
	goAhead = 'y'
)

// Install puts every thread of the calling process, and everything it
// will start, under Program with the engine as the supervisor: it loads
// the filter with a listener, sends the listener over the socket conn (the
// descriptor the engine passed in, see Handoff), closes its own copy and
// waits for the engine's go-ahead. It closes conn. Any error means the
// command must not run.
func Install(conn int) error {
	return install(conn, false, unix.SECCOMP_FILTER_FLAG_TSYNC|unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH)
}

// InstallThread is Install for the calling thread only, with the inet
// part of the filter (Policy.Inet): the Landlock helper, whose other
// threads run nothing of the sandbox, calls it on the locked thread that
// then execs the command (its Landlock domain and credentials are that
// thread's too).
func InstallThread(conn int) error { return install(conn, true, 0) }

func install(conn int, inet bool, sync uintptr) error {
	defer unix.Close(conn)
	prog, err := programFor(inet)
	if err != nil {
		return err
	}
	listener, err := loadFilter(prog, sync, true)
	if err != nil {
		return fmt.Errorf("loading the Unix socket guard: %w", err)
	}
	err = unix.Sendmsg(conn, []byte(hello), unix.UnixRights(listener), nil, 0)
	unix.Close(listener)
	if err != nil {
		return fmt.Errorf("handing the Unix socket guard to the engine: %w", err)
	}
	var b [1]byte
	for {
		n, err := unix.Read(conn, b[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n != 1 || b[0] != goAhead {
			return errors.New("the engine did not take over the Unix socket guard; nothing was run")
		}
		return nil
	}
}

// loadFilter loads prog (for all threads with the sync flags), after
// setting no_new_privs when nnp is set, and returns the listener. A kernel
// without SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (before 5.19) gets the
// filter without it: a signal may then interrupt a waiting connect, which
// is restarted (see the package doc).
func loadFilter(prog []unix.SockFilter, sync uintptr, nnp bool) (int, error) {
	if nnp {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return -1, fmt.Errorf("setting no_new_privs: %w", err)
		}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) | sync
	for {
		fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		switch {
		case e == 0:
			return int(fd), nil
		case e == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0:
			flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
		default:
			return -1, e
		}
	}
}
