package client

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf is the uid of the process that listens on conn's other end
// (LOCAL_PEERCRED); macOS gives no pid with it.
func peerOf(conn net.Conn) (uid, pid int, err error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return 0, 0, errors.New("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Xucred
	var gerr error
	if err := raw.Control(func(fd uintptr) { cred, gerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED) }); err != nil {
		return 0, 0, err
	}
	if gerr != nil {
		return 0, 0, gerr
	}
	return int(cred.Uid), -1, nil
}
