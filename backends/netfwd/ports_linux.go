package netfwd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/unix"
)

// Privileged ports (below 1024) can be bound only with
// CAP_NET_BIND_SERVICE over the network namespace. In a bwrap sandbox
// the forwarder runs in a second user namespace below the one that owns
// the sandbox's network namespace (--disable-userns makes it), so no
// capability it could hold would count there, and the sandbox holds
// none. The engine does hold it there: it is root, or it owns the user
// namespace that bwrap made. So for a loopback rule's port below 1024
// the forwarder makes the TCP socket, inside the sandbox's own network
// namespace, and hands it to the engine over a socket pair (--ports-fd)
// before the command runs; the engine checks that it is an unbound TCP
// socket of that namespace and not of its own, binds it to 127.0.0.1 at
// the rule's port and hands it back bound. The sandbox gains no
// capability, and nothing is bound outside its own namespace.

// portsHello is what the forwarder sends with its sockets; the engine
// answers portsOK, or portsRefused and the reason.
const (
	portsHello   = "senclaw-netfwd-ports/1"
	portsOK      = 'y'
	portsRefused = 'n'
)

// askBound has the engine bind a socket at 127.0.0.1:p for each of ports
// over the socket pair conn, then returns them bound, in that order. It
// closes conn.
func askBound(conn int, ports []int) ([]int, error) {
	defer unix.Close(conn)
	var socks []int
	fail := func(err error) ([]int, error) {
		for _, s := range socks {
			unix.Close(s)
		}
		return nil, err
	}
	for range ports {
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fail(fmt.Errorf("making a socket for the loopback ports: %w", err))
		}
		socks = append(socks, s)
		// Shared with the sandbox's other forwarders, as serveTCP's are.
		if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail(fmt.Errorf("making a socket for the loopback ports: %w", err))
		}
	}
	if err := unix.Sendmsg(conn, []byte(portsHello), unix.UnixRights(socks...), nil, 0); err != nil {
		return fail(fmt.Errorf("handing the loopback ports' sockets to the engine: %w", err))
	}
	var b [512]byte
	n, err := readRetry(conn, b[:])
	switch {
	case err != nil || n == 0:
		return fail(errors.New("the engine did not bind the loopback ports below 1024"))
	case b[0] != portsOK:
		return fail(fmt.Errorf("the engine refused to bind the loopback ports below 1024: %s", b[1:n]))
	}
	for i, s := range socks {
		sa, err := unix.Getsockname(s)
		in, ok := sa.(*unix.SockaddrInet4)
		if err != nil || !ok || in.Port != ports[i] || in.Addr != [4]byte{127, 0, 0, 1} {
			return fail(fmt.Errorf("the socket for loopback port %d came back bound elsewhere", ports[i]))
		}
	}
	return socks, nil
}

func readRetry(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Read(fd, b)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// serveBound listens on the bound socket s and serves it with handle.
func serveBound(s, p int, handle func(net.Conn)) error {
	if err := unix.Listen(s, unix.SOMAXCONN); err != nil {
		unix.Close(s)
		return fmt.Errorf("listening on 127.0.0.1:%d: %w", p, err)
	}
	f := os.NewFile(uintptr(s), "loopback-"+strconv.Itoa(p))
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("listening on 127.0.0.1:%d: %w", p, err)
	}
	go accept(l, handle)
	return nil
}

// PortsHandoff is the engine's end of a run's --ports-fd: a socket pair
// whose other end the forwarder inherits. Make it before the sandbox
// starts, pass ChildEnd to it, then Bind.
type PortsHandoff struct {
	*backends.Handoff
	ports []int
}

// NewPortsHandoff prepares the binding of ports (each below 1024).
func NewPortsHandoff(ports []int) (*PortsHandoff, error) {
	for _, p := range ports {
		if !PrivilegedPort(p) {
			return nil, fmt.Errorf("port %d needs no binding by the engine", p)
		}
	}
	h, err := backends.NewHandoff("netfwd-ports")
	if err != nil {
		return nil, fmt.Errorf("creating the loopback ports' handoff: %w", err)
	}
	return &PortsHandoff{Handoff: h, ports: ports}, nil
}

// portsTimeout bounds the wait for the forwarder when ctx has none.
const portsTimeout = 30 * time.Second

// Bind waits for the forwarder's sockets, checks them, binds each to
// 127.0.0.1 at its port and answers. sandboxPid is a process of the
// sandbox (bwrap's child), whose network namespace the sockets must be
// in; it gives up when ctx ends or exited is closed. Any error means the
// run must be ended: the forwarder runs nothing without the answer.
func (h *PortsHandoff) Bind(ctx context.Context, sandboxPid int, exited <-chan struct{}) error {
	conn, stop, err := h.Conn(ctx, exited, portsTimeout)
	if err != nil {
		return fmt.Errorf("receiving the loopback ports' sockets: %w", err)
	}
	defer stop()
	socks, err := receiveSockets(conn, len(h.ports))
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range socks {
			unix.Close(s)
		}
	}()
	err = bindAll(socks, h.ports, sandboxPid)
	answer := []byte{portsOK}
	if err != nil {
		answer = append([]byte{portsRefused}, err.Error()...)
	}
	if _, werr := conn.Write(answer); werr != nil && err == nil {
		err = fmt.Errorf("answering the forwarder: %w", werr)
	}
	return err
}

// receiveSockets reads the forwarder's message: the hello and want
// descriptors.
func receiveSockets(conn *net.UnixConn, want int) ([]int, error) {
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*want+4))
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("the forwarder did not hand over the loopback ports' sockets: %w", err)
	}
	msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	fail := func(format string, a ...any) ([]int, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("refusing the loopback ports' sockets: "+format, a...)
	}
	switch {
	case perr != nil || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0:
		return fail("the message was malformed or truncated")
	case !bytes.Equal(buf[:n], []byte(portsHello)):
		return fail("unexpected message %q", buf[:n])
	case len(fds) != want:
		return fail("%d descriptors instead of %d", len(fds), want)
	}
	return fds, nil
}

// bindAll checks each socket and binds it to 127.0.0.1 at its port. A
// socket must be an unbound IPv4 TCP socket in the network namespace of
// sandboxPid, which is not the engine's own: the engine binds a
// privileged port only inside the sandbox.
func bindAll(socks, ports []int, sandboxPid int) error {
	var sandboxNet, ownNet unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(sandboxPid)+"/ns/net", &sandboxNet); err != nil {
		return fmt.Errorf("finding the sandbox's network namespace: %w", err)
	}
	if err := unix.Stat("/proc/thread-self/ns/net", &ownNet); err != nil {
		return fmt.Errorf("finding the engine's network namespace: %w", err)
	}
	if sandboxNet.Ino == ownNet.Ino && sandboxNet.Dev == ownNet.Dev {
		return errors.New("the sandbox shares the engine's network namespace; no privileged port is bound there")
	}
	for i, s := range socks {
		p := ports[i]
		if err := checkSocket(s, sandboxNet); err != nil {
			return fmt.Errorf("loopback port %d: %w", p, err)
		}
		if err := unix.Bind(s, &unix.SockaddrInet4{Port: p, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return fmt.Errorf("binding loopback port %d in the sandbox: %w", p, err)
		}
	}
	return nil
}

// checkSocket checks that s is an unbound IPv4 TCP socket in the network
// namespace netns.
func checkSocket(s int, netns unix.Stat_t) error {
	for _, o := range []struct{ opt, want int }{
		{unix.SO_DOMAIN, unix.AF_INET}, {unix.SO_TYPE, unix.SOCK_STREAM}, {unix.SO_PROTOCOL, unix.IPPROTO_TCP},
	} {
		v, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, o.opt)
		if err != nil || v != o.want {
			return errors.New("not an IPv4 TCP socket")
		}
	}
	nsFD, err := unix.IoctlRetInt(s, unix.SIOCGSKNS)
	if err != nil {
		return fmt.Errorf("finding the socket's network namespace: %w", err)
	}
	var st unix.Stat_t
	err = unix.Fstat(nsFD, &st)
	unix.Close(nsFD)
	if err != nil || st.Ino != netns.Ino || st.Dev != netns.Dev {
		return errors.New("the socket is not of the sandbox's network namespace")
	}
	sa, err := unix.Getsockname(s)
	if in, ok := sa.(*unix.SockaddrInet4); err != nil || !ok || in.Port != 0 {
		return errors.New("the socket is bound already")
	}
	return nil
}
