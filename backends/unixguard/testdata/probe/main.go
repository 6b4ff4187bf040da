// Command probe runs inside a test sandbox and tries to reach Unix
// sockets in every way the guard must handle, printing one line per
// check: "name=ok" or "name=ERRNO" (or a value). Built static by the
// tests of backends/unixguard; it is not part of SenClaw.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	for _, arg := range os.Args[1:] {
		name, rest, _ := strings.Cut(arg, ":")
		var params []string
		if rest != "" {
			params = strings.Split(rest, ",")
		}
		fmt.Printf("%s=%s\n", arg, run(name, params))
	}
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	if ok := asErrno(err, &e); ok {
		return unix.ErrnoName(e)
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

func asErrno(err error, e *syscall.Errno) bool {
	for err != nil {
		if x, ok := err.(syscall.Errno); ok {
			*e = x
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func run(name string, p []string) string {
	switch name {
	case "connect": // connect:PATH
		return result(connectPath(p[0]))
	case "relative": // relative:DIR,NAME
		if err := os.Chdir(p[0]); err != nil {
			return result(err)
		}
		return result(connectPath(p[1]))
	case "serve": // serve:PATH: a server and a client of it, both inside
		return serveAndConnect(p[0])
	case "abstract":
		return serveAndConnect("@senclaw-probe-" + strconv.Itoa(os.Getpid()))
	case "tcp": // a loopback TCP server and a client, both inside
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return result(err)
		}
		defer l.Close()
		go func() {
			c, err := l.Accept()
			if err == nil {
				c.Write([]byte("hi\n"))
				c.Close()
			}
		}()
		return readLine(net.Dial("tcp", l.Addr().String()))
	case "proxy": // proxy:PORT: what the forwarded proxy port answers
		return readLine(net.Dial("tcp", "127.0.0.1:"+p[0]))
	case "peer": // peer:PATH: what the server says it saw
		return readLine(net.Dial("unix", p[0]))
	case "procfd": // procfd:PATH: through an O_PATH handle's /proc link
		fd, err := unix.Open(p[0], unix.O_PATH, 0)
		if err != nil {
			return result(err)
		}
		self := result(connectPath("/proc/self/fd/" + strconv.Itoa(fd)))
		pid := result(connectPath("/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(fd)))
		return self + "," + pid
	case "sendto": // sendto:PATH: a datagram to PATH, without connect
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		return sendTo(fd, err, p[0])
	case "pairsendto": // pairsendto:PATH: the same from a socketpair's end
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		return sendTo(fds[0], err, p[0])
	case "dgram":
		_, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return result(err)
	case "dgrampair":
		_, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		return result(err)
	case "rawunix":
		_, err := unix.Socket(unix.AF_UNIX, unix.SOCK_RAW, 0)
		return result(err)
	case "streampair":
		_, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		return result(err)
	case "seqpacket": // seqpacket:PATH: sendto with an address is ignored
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
		if err != nil {
			return result(err)
		}
		return result(unix.Sendto(fd, []byte("x"), 0, &unix.SockaddrUnix{Name: p[0]}))
	case "listener":
		return result(newListener())
	case "race": // race:ALLOWED,OUTSIDE,N
		n, _ := strconv.Atoi(p[2])
		return race(p[0], p[1], n)
	}
	return "unknown"
}

// sendTo sends a datagram from fd (made with err) to path.
func sendTo(fd int, err error, path string) string {
	if err != nil {
		return result(err)
	}
	return result(unix.Sendto(fd, []byte("x"), 0, &unix.SockaddrUnix{Name: path}))
}

func connectPath(path string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: path})
}

func readLine(c net.Conn, err error) string {
	if err != nil {
		return result(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return result(err)
	}
	return strings.TrimSpace(line)
}

func serveAndConnect(addr string) string {
	os.Remove(addr)
	l, err := net.Listen("unix", addr)
	if err != nil {
		return "listen_" + result(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("hi\n"))
			c.Close()
		}
	}()
	return readLine(net.Dial("unix", addr))
}

// newListener tries to load a filter with a listener of its own, which
// would take the connect notifications away from the engine.
func newListener() error {
	prog := []unix.SockFilter{{Code: 0x06, K: unix.SECCOMP_RET_ALLOW}}
	fprog := unix.SockFprog{Len: 1, Filter: &prog[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return e
	}
	return nil
}

// race connects n times to the allowed socket while one thread keeps
// rewriting the address to the outside socket (and to an inet address)
// and another keeps dup2-ing a fresh Unix socket onto the descriptor.
// It prints how many connects succeeded; the test counts what the outside
// server accepted.
func race(allowed, outside string, n int) string {
	l, err := net.Listen("unix", allowed)
	if err != nil {
		return "listen_" + result(err)
	}
	go acceptAll(l)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "listen_" + result(err)
	}
	go acceptAll(tl)
	good := rawUnix(allowed)
	bad := rawUnix(outside)
	var inet [unix.SizeofSockaddrUnix]byte
	port := tl.Addr().(*net.TCPAddr).Port
	*(*uint16)(unsafe.Pointer(&inet[0])) = unix.AF_INET
	inet[2], inet[3] = byte(port>>8), byte(port)
	inet[4], inet[7] = 127, 1

	var buf [unix.SizeofSockaddrUnix]byte
	copy(buf[:], good[:])
	// The descriptor connected is always this number, which nothing else
	// uses, so the swapping thread never hits another descriptor.
	const target = 900
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // rewrites the address byte by byte
		defer wg.Done()
		runtime.LockOSThread()
		for i := 0; !stop.Load(); i++ {
			src := &bad
			switch i % 3 {
			case 0:
				src = &good
			case 1:
				src = &inet
			}
			for j := range buf {
				*(*byte)(unsafe.Pointer(&buf[j])) = src[j]
			}
		}
	}()
	go func() { // swaps another socket in under the descriptor
		defer wg.Done()
		runtime.LockOSThread()
		for !stop.Load() {
			s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				continue
			}
			unix.Dup2(s, target)
			unix.Close(s)
		}
	}()
	ok := 0
	for i := 0; i < n; i++ {
		typ := unix.AF_UNIX
		if i%2 == 1 {
			typ = unix.AF_INET
		}
		fd, err := unix.Socket(typ, unix.SOCK_STREAM, 0)
		if err != nil {
			continue
		}
		unix.Dup2(fd, target)
		unix.Close(fd)
		_, _, e := unix.Syscall(unix.SYS_CONNECT, target, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if e == 0 {
			ok++
		}
	}
	stop.Store(true)
	wg.Wait()
	return strconv.Itoa(ok)
}

// acceptAll accepts and closes connections until l is closed.
func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

func rawUnix(path string) (b [unix.SizeofSockaddrUnix]byte) {
	*(*uint16)(unsafe.Pointer(&b[0])) = unix.AF_UNIX
	copy(b[2:], path)
	return b
}
