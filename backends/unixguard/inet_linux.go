package unixguard

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inetAddr reads an inet or inet6 address: its address (an IPv4 address
// mapped into IPv6 is the IPv4 one) and port; ok is false for another
// family or a short address.
func inetAddr(addr []byte) (netip.AddrPort, bool) {
	if len(addr) < 2 {
		return netip.AddrPort{}, false
	}
	switch binary.NativeEndian.Uint16(addr) {
	case unix.AF_INET:
		if len(addr) >= unix.SizeofSockaddrInet4 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(addr[4:8])), binary.BigEndian.Uint16(addr[2:])), true
		}
	case unix.AF_INET6:
		if len(addr) >= unix.SizeofSockaddrInet6 {
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(addr[8:24])).Unmap(), binary.BigEndian.Uint16(addr[2:])), true
		}
	}
	return netip.AddrPort{}, false
}

// connectsTo reports whether the inet rules let a socket connect to addr.
func (r *InetRules) connectsTo(addr []byte) bool {
	ap, ok := inetAddr(addr)
	return ok && slices.ContainsFunc(r.Connect, func(c netip.AddrPort) bool {
		return c.Port() == ap.Port() && c.Addr().Unmap() == ap.Addr()
	})
}

// bindsTo reports whether the inet rules let a socket be bound to ap:
// one of the ports, on a loopback address.
func (r *InetRules) bindsTo(ap netip.AddrPort) bool {
	return ap.Addr().IsLoopback() && slices.Contains(r.Bind, ap.Port())
}

// bind does the bind() that n stands for, with the address it read and
// checked, on the caller's own socket.
func (s *Supervisor) bind(n notif) (unix.Errno, bool) {
	sock, addr, errno, ok := s.take(n, true)
	if !ok || errno != 0 {
		return errno, ok
	}
	defer unix.Close(sock)
	if ap, isInet := inetAddr(addr); !isInet || !s.inet.bindsTo(ap) {
		return s.refuse(), true
	}
	_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(sock), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
	return e, true
}

// listen does the listen() that n stands for on the caller's own socket,
// if that socket is bound where the rules allow: a listen() on a socket
// bound nowhere would bind it to a random port on every address.
func (s *Supervisor) listen(n notif) (unix.Errno, bool) {
	sock, _, errno, ok := s.take(n, false)
	if !ok || errno != 0 {
		return errno, ok
	}
	defer unix.Close(sock)
	var ap netip.AddrPort
	sa, _ := unix.Getsockname(sock)
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ap = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		ap = netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
	default:
		return s.refuse(), true
	}
	if !s.inet.bindsTo(ap) {
		return s.refuse(), true
	}
	_, _, e := unix.Syscall(unix.SYS_LISTEN, uintptr(sock), uintptr(int32(n.Data.Args[1])), 0)
	return e, true
}

// take reads, for notification n, the caller's socket (its first
// argument) and, with addr, the address (its second and third), once,
// then checks that the caller still waits: ok is false when it is gone.
// errno is what to answer when the reading failed.
func (s *Supervisor) take(n notif, addr bool) (sock int, a []byte, errno unix.Errno, ok bool) {
	tid := int(n.Pid)
	pidfd, err := openTask(tid)
	if err != nil {
		return -1, nil, 0, false
	}
	defer unix.Close(pidfd)
	if addr {
		a, errno = readAddr(tid, n.Data.Args[1], n.Data.Args[2])
	}
	sock = -1
	if errno == 0 {
		if sock, err = unix.PidfdGetfd(pidfd, int(int32(n.Data.Args[0])), 0); err != nil {
			sock, errno = -1, unix.EBADF
		}
	}
	if !s.valid(n.ID) {
		if sock >= 0 {
			unix.Close(sock)
		}
		return -1, nil, 0, false
	}
	if errno != 0 && sock >= 0 {
		unix.Close(sock)
		sock = -1
	}
	return sock, a, errno, true
}
