package client

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf is the uid and pid of the process that listens on conn's other
// end (SO_PEERCRED: recorded by the kernel when it called listen).
func peerOf(conn net.Conn) (uid, pid int, err error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return 0, 0, errors.New("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var gerr error
	if err := raw.Control(func(fd uintptr) { cred, gerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return 0, 0, err
	}
	if gerr != nil {
		return 0, 0, gerr
	}
	return int(cred.Uid), int(cred.Pid), nil
}
