package api

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// peerChecked accepts only connections from the daemon's own user (or
// root) on the Unix socket, checked with SO_PEERCRED, in addition to the
// socket file's 0600 mode.
func peerChecked(l net.Listener) net.Listener { return &peerListener{Listener: l, uid: os.Getuid()} }

type peerListener struct {
	net.Listener
	uid int
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.allowed(c) {
			return c, nil
		}
		c.Close()
	}
}

func (l *peerListener) allowed(c net.Conn) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return false
	}
	return int(cred.Uid) == l.uid || cred.Uid == 0
}
