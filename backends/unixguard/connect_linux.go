package unixguard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxAddr is sizeof(struct sockaddr_storage): connect() refuses longer
// addresses with EINVAL before looking at them.
const maxAddr = 128

// connect does the connect() that notification n stands for and returns
// its errno (0: connected) and the address it read. ok is false when the
// caller is gone (nothing to answer). Everything is read from the caller
// (the address bytes, its socket, its working directory) before its
// notification is checked to be still alive, and only then is anything
// done.
func (s *Supervisor) connect(n notif) (errno unix.Errno, addr []byte, ok bool) {
	tid := int(n.Pid)
	pidfd, err := openTask(tid)
	if err != nil {
		return 0, nil, false
	}
	defer unix.Close(pidfd)
	addr, errno = readAddr(tid, n.Data.Args[1], n.Data.Args[2])
	sock, cwd := -1, -1
	if errno == 0 {
		sock, err = unix.PidfdGetfd(pidfd, int(int32(n.Data.Args[0])), 0)
		if err != nil {
			errno = unix.EBADF
		}
	}
	if errno == 0 && relativeName(addr) {
		// A relative name is the caller's own thread's working directory's.
		cwd, err = unix.Open("/proc/"+strconv.Itoa(tid)+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			errno = unix.ENOENT
		}
	}
	defer func() {
		for _, fd := range []int{sock, cwd} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	if !s.valid(n.ID) {
		return 0, nil, false
	}
	if errno != 0 {
		return errno, addr, true
	}
	return s.connectAs(sock, addr, cwd), addr, true
}

// report tells the observer of a connect it answered, with the address
// that was read and checked.
func (s *Supervisor) report(tid int, addr []byte, errno unix.Errno, refused bool) {
	target := describe(addr)
	if target == "" {
		return
	}
	c := Connect{Pid: tgidOf(tid), Target: target, Refused: refused}
	c.Carrier = c.Pid == s.carrier
	if errno != 0 {
		c.Errno = unix.ErrnoName(errno)
	}
	s.observe(c)
}

// describe writes an inet or Unix address as the tracer does.
func describe(addr []byte) string {
	if len(addr) < 2 {
		return ""
	}
	switch binary.NativeEndian.Uint16(addr) {
	case unix.AF_INET:
		if len(addr) >= unix.SizeofSockaddrInet4 {
			ip := netip.AddrFrom4([4]byte(addr[4:8]))
			return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(addr[2:])).String()
		}
	case unix.AF_INET6:
		if len(addr) >= unix.SizeofSockaddrInet6 {
			ip := netip.AddrFrom16([16]byte(addr[8:24]))
			return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(addr[2:])).String()
		}
	case unix.AF_UNIX:
		if name := unixName(addr); name != "" {
			return "unix:" + name
		}
		if len(addr) > 3 {
			name := addr[3:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			return "unix:@" + string(name)
		}
	}
	return ""
}

// tgidOf is the process of thread tid (tid itself when unknown).
func tgidOf(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return tid
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if tgid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return tgid
			}
		}
	}
	return tid
}

// openTask returns a pidfd of the thread tid, or, on kernels before 6.9,
// of its process (whose descriptor table the thread shares unless it
// unshared it: then the wrong socket of the sandbox may be connected, to
// the address that was checked, which is no way out).
func openTask(tid int) (int, error) {
	if kernel().threadPidfd {
		return unix.PidfdOpen(tid, pidfdThread)
	}
	return unix.PidfdOpen(tgidOf(tid), 0)
}

// readAddr copies the caller's address, once: what is checked and used
// is this copy, whatever the caller's memory says later.
func readAddr(tid int, ptr, length uint64) ([]byte, unix.Errno) {
	l := int(int32(length))
	if l < 0 || l > maxAddr {
		return nil, unix.EINVAL
	}
	buf := make([]byte, l)
	if l == 0 {
		return buf, 0
	}
	n, err := unix.ProcessVMReadv(tid, []unix.Iovec{{Base: &buf[0], Len: uint64(l)}}, []unix.RemoteIovec{{Base: uintptr(ptr), Len: l}}, 0)
	if err != nil || n != l {
		return nil, unix.EFAULT
	}
	return buf, 0
}

// unixName returns the file name of an AF_UNIX address, or "" for an
// abstract or unnamed address (as the kernel reads it: the bytes after
// the family up to the address length or the first NUL).
func unixName(addr []byte) string {
	if len(addr) < 3 || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX || addr[2] == 0 {
		return ""
	}
	name := addr[2:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return string(name)
}

func relativeName(addr []byte) bool {
	name := unixName(addr)
	return name != "" && !path.IsAbs(name)
}

// connectAs decides and does the connect (the caller runs it with the
// sandbox user's credentials).
func (s *Supervisor) connectAs(sock int, addr []byte, cwd int) unix.Errno {
	if len(addr) < 2 {
		return rawConnect(sock, addr)
	}
	switch binary.NativeEndian.Uint16(addr) {
	case unix.AF_UNIX:
		if len(addr) > unix.SizeofSockaddrUnix {
			return unix.EINVAL
		}
		if name := unixName(addr); name != "" {
			return s.connectName(sock, name, cwd)
		}
		// Abstract sockets belong to the socket's network namespace,
		// the sandbox's own; unnamed ones are the kernel's to refuse.
	case unix.AF_INET, unix.AF_INET6:
		// In the socket's network namespace: the sandbox's own, or, for a
		// sandbox without one (Inet), only where its rules say.
		if s.inet != nil && !s.inet.connectsTo(addr) {
			return s.refuse()
		}
	case unix.AF_UNSPEC:
		// Dissolves the socket's association: nothing is reached.
	case unix.AF_NETLINK:
		// Multicast groups ask for a capability in the namespace that
		// the engine's threads have and the sandbox has not.
		if len(addr) >= unix.SizeofSockaddrNetlink && binary.NativeEndian.Uint32(addr[8:]) != 0 {
			return s.refuse()
		}
	default:
		return s.refuse()
	}
	return rawConnect(sock, addr)
}

// connectName connects sock to the socket file name: a named socket by
// its host path, else the file name resolves to in the sandbox, if it
// lies in one of the sandbox's own places.
func (s *Supervisor) connectName(sock int, name string, cwd int) unix.Errno {
	if path.IsAbs(name) && slices.Contains(s.named, path.Clean(name)) {
		fd, err := openat2(unix.AT_FDCWD, path.Clean(name), unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
		if err != 0 {
			return err
		}
		defer unix.Close(fd)
		return connectTo(sock, fd)
	}
	var fd int
	var err unix.Errno
	if path.IsAbs(name) {
		fd, err = openat2(s.pl.root, name, inside)
	} else {
		fd, err = openat2(cwd, name, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	}
	switch err {
	case 0:
	case unix.ELOOP, unix.EXDEV, unix.EAGAIN:
		// A link on the way (or a rename race): not followed.
		return s.refuse()
	default:
		return err
	}
	defer unix.Close(fd)
	if !s.pl.own(fd) {
		return s.refuse()
	}
	return connectTo(sock, fd)
}

// refuse is the answer to what the guard does not allow: EACCES, marked
// as the guard's own (errGuard) until it is sent, so that the observer
// can tell a refusal by the guard from the kernel's answer.
func (s *Supervisor) refuse() unix.Errno { return errGuard }

// errGuard is EACCES given by the guard; answer sends it as EACCES.
const errGuard = unix.Errno(1<<16) | unix.EACCES

// openat2 opens name from dir as an O_PATH handle, retrying a lookup
// that a concurrent rename made the kernel give up (EAGAIN) a few times.
func openat2(dir int, name string, resolve uint64) (int, unix.Errno) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dir, name, &how)
		if err == nil {
			return fd, 0
		}
		var e unix.Errno
		if !errors.As(err, &e) {
			return -1, unix.EACCES
		}
		if e != unix.EAGAIN && e != unix.EINTR || try == 3 {
			return -1, e
		}
	}
}

// connectTo connects sock to the socket file the O_PATH handle fd is
// open on, through the handle's /proc/self/fd link: the very inode that
// was checked, whatever its path names by now.
func connectTo(sock, fd int) unix.Errno {
	var sa unix.RawSockaddrUnix
	sa.Family = unix.AF_UNIX
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	for i := 0; i < len(p); i++ {
		sa.Path[i] = int8(p[i])
	}
	return rawConnectPtr(sock, unsafe.Pointer(&sa), 2+len(p)+1)
}

// rawConnect connects sock to the address bytes, exactly as given.
func rawConnect(sock int, addr []byte) unix.Errno {
	if len(addr) == 0 {
		return rawConnectPtr(sock, nil, 0)
	}
	return rawConnectPtr(sock, unsafe.Pointer(&addr[0]), len(addr))
}

func rawConnectPtr(sock int, p unsafe.Pointer, n int) unix.Errno {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(p), uintptr(n))
	return e
}
