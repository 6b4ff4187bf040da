package landlock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Who is at the other end of a connection to a run's door. The door is a
// port on 127.0.0.1, and every process of this machine may connect to
// it; only the run's own may use it (the proxy applies the sandbox's
// rules and connects as the engine). A connection's peer is a TCP socket
// of this machine: the kernel's socket diagnostics (NETLINK_SOCK_DIAG,
// inet_diag) tell its owner's uid and its inode, and a socket the run
// holds is one of the descriptors of the run's processes (its cgroup's
// members, or, without a cgroup, the helper's descendants, since the
// helper stays as their subreaper). That holds without cgroups, for an
// ordinary user's engine too: it reads its own processes' descriptors.

// sockDiagMsgLen is the size of struct inet_diag_msg.
const sockDiagMsgLen = 72

// inetDiagNoCookie asks inet_diag for a socket by its addresses alone.
const inetDiagNoCookie = ^uint32(0)

// tcpListen is TCP_LISTEN, a listener's state in inet_diag.
const tcpListen = 10

var diagSeq atomic.Uint32

// peerSocket returns the uid and inode of the TCP socket of this machine
// whose own address is from and whose peer is to: the client's side of a
// connection accepted at to. An error means there is none (it closed,
// or is another host's) or the kernel would not say.
func peerSocket(from, to netip.AddrPort) (uid, inode uint32, err error) {
	from, to = netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, 0, fmt.Errorf("opening the socket diagnostics: %w", err)
	}
	defer unix.Close(fd)
	family := uint8(unix.AF_INET6)
	if from.Addr().Is4() {
		family = unix.AF_INET
	}
	// struct nlmsghdr, then struct inet_diag_req_v2.
	req := make([]byte, unix.NLMSG_HDRLEN+56)
	seq := diagSeq.Add(1)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], seq)
	r := req[unix.NLMSG_HDRLEN:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], ^uint32(0)) // every state
	putSockID(r[8:], from, to)
	binary.NativeEndian.PutUint32(r[48:], inetDiagNoCookie)
	binary.NativeEndian.PutUint32(r[52:], inetDiagNoCookie)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, 0, fmt.Errorf("asking the socket diagnostics: %w", err)
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return 0, 0, fmt.Errorf("reading the socket diagnostics: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return 0, 0, fmt.Errorf("reading the socket diagnostics: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
						return 0, 0, unix.Errno(-e)
					}
				}
				return 0, 0, errors.New("no such socket")
			case unix.SOCK_DIAG_BY_FAMILY:
				return diagAnswer(m.Data, from, to)
			}
		}
	}
}

// diagAnswer reads one struct inet_diag_msg: it must be the very socket
// asked for (its addresses, not a listener's) and open (a closed one has
// no inode).
func diagAnswer(msg []byte, from, to netip.AddrPort) (uid, inode uint32, err error) {
	if len(msg) < sockDiagMsgLen {
		return 0, 0, errors.New("a short socket diagnostics answer")
	}
	addr := func(b []byte) netip.Addr {
		if msg[0] == unix.AF_INET {
			return netip.AddrFrom4([4]byte(b[:4]))
		}
		return netip.AddrFrom16([16]byte(b[:16])).Unmap()
	}
	own := netip.AddrPortFrom(addr(msg[8:24]), binary.BigEndian.Uint16(msg[4:]))
	peer := netip.AddrPortFrom(addr(msg[24:40]), binary.BigEndian.Uint16(msg[6:]))
	if msg[1] == tcpListen || own != from || peer != to {
		return 0, 0, fmt.Errorf("the socket diagnostics answered for another socket (%s to %s)", own, peer)
	}
	uid = binary.NativeEndian.Uint32(msg[64:])
	inode = binary.NativeEndian.Uint32(msg[68:])
	if inode == 0 {
		return 0, 0, errors.New("the peer's socket is closed")
	}
	return uid, inode, nil
}

// putSockID writes a struct inet_diag_sockid's ports and addresses
// (network byte order): from is the socket's own, to its peer's.
func putSockID(b []byte, from, to netip.AddrPort) {
	binary.BigEndian.PutUint16(b[0:], from.Port())
	binary.BigEndian.PutUint16(b[2:], to.Port())
	put := func(at []byte, a netip.Addr) {
		if a.Is4() {
			v := a.As4()
			copy(at, v[:])
			return
		}
		v := a.As16()
		copy(at, v[:])
	}
	put(b[4:20], from.Addr())
	put(b[20:36], to.Addr())
}

// holds reports whether one of pids has the socket inode among its
// descriptors. A process whose descriptors cannot be read (gone, or
// not dumpable for an ordinary engine) does not hold it.
func holds(pids []int, inode uint32) bool {
	want := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(-1)
		f.Close()
		for _, n := range names {
			if l, err := os.Readlink(dir + n); err == nil && l == want {
				return true
			}
		}
	}
	return false
}
