package portowner

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Holding returns the sockets of this network namespace that hold port,
// IPv4 and IPv6, read from /proc/net/tcp and tcp6 (the uid is always
// there); the process is found through /proc/*/fd where it can be read.
// A socket bound to the port holds it whether it listens yet or not: a
// squatter may bind first, let the engine go elsewhere, and listen after.
// Sockets in TIME_WAIT (no inode) hold nothing a listener minds.
func Holding(port int) ([]Holder, error) {
	byInode := map[string]*Holder{}
	var order []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue // no IPv6
			}
			return nil, err
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[9] == "0" { // no inode: TIME_WAIT
				continue
			}
			addr, p, ok := parseAddr(fields[1])
			if !ok || p != port {
				continue
			}
			uid, err := strconv.Atoi(fields[7])
			if err != nil {
				continue
			}
			inode := fields[9]
			if _, seen := byInode[inode]; !seen {
				byInode[inode] = &Holder{Addr: net.JoinHostPort(addr.String(), strconv.Itoa(p)), UID: uid, Listens: fields[3] == "0A"} // 0A: LISTEN
				order = append(order, inode)
			}
		}
	}
	// A socket bound and not listening is in neither file: the kernel's
	// socket diagnostics list those (TCP_BOUND_INACTIVE, Linux 6.9; an
	// older kernel lists none, and the caller sees no holder).
	for _, h := range boundInactive(port) {
		if _, seen := byInode[h.inode]; !seen {
			byInode[h.inode] = &Holder{Addr: h.addr, UID: h.uid}
			order = append(order, h.inode)
		}
	}
	if len(order) > 0 {
		findProcesses(byInode)
	}
	out := make([]Holder, 0, len(order))
	for _, inode := range order {
		out = append(out, *byInode[inode])
	}
	return out, nil
}

// parseAddr reads /proc/net/tcp's "0100007F:1EC6": the address in the
// kernel's byte order, 32 bits at a time, and the port in hex.
func parseAddr(s string) (net.IP, int, bool) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, false
	}
	raw, err := hex.DecodeString(hexIP)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		ip[i], ip[i+1], ip[i+2], ip[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	p, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	return ip, int(p), true
}

// findProcesses fills in the pid and command of each holder whose socket
// inode one of the processes we may look into holds.
func findProcesses(byInode map[string]*Holder) {
	procs, _ := os.ReadDir("/proc")
	left := len(byInode)
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			h, ok := byInode[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")]
			if !ok || h.PID != 0 {
				continue
			}
			h.PID, h.Command = pid, command(pid)
			if left--; left == 0 {
				return
			}
		}
	}
}

func command(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(data))
}

// tcpBoundInactive is TCP_BOUND_INACTIVE, inet_diag's state of a socket
// bound and neither listening nor connected.
const tcpBoundInactive = 13

// boundSocket is one bound, inactive socket on the port.
type boundSocket struct {
	addr, inode string
	uid         int
}

// boundInactive lists the TCP sockets bound to port that neither listen
// nor are connected, IPv4 and IPv6, from the kernel's socket diagnostics
// (NETLINK_SOCK_DIAG); none when it cannot say.
func boundInactive(port int) []boundSocket {
	var out []boundSocket
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		out = append(out, dumpBound(family, port)...)
	}
	return out
}

func dumpBound(family uint8, port int) []boundSocket {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
	// struct nlmsghdr, then struct inet_diag_req_v2 asking for every
	// socket in TCP_BOUND_INACTIVE.
	req := make([]byte, unix.NLMSG_HDRLEN+56)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], 1)
	r := req[unix.NLMSG_HDRLEN:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 1<<tcpBoundInactive)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil
	}
	var out []boundSocket
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return out
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return out
		}
		for _, m := range msgs {
			if m.Header.Type == unix.NLMSG_DONE || m.Header.Type == unix.NLMSG_ERROR {
				return out
			}
			// struct inet_diag_msg: family, state, ..., sport (big
			// endian) at 4, src address at 8, uid at 64, inode at 68.
			d := m.Data
			if len(d) < 72 || int(binary.BigEndian.Uint16(d[4:])) != port {
				continue
			}
			var ip net.IP
			if d[0] == unix.AF_INET {
				ip = net.IP(append([]byte(nil), d[8:12]...))
			} else {
				ip = net.IP(append([]byte(nil), d[8:24]...))
			}
			out = append(out, boundSocket{
				addr:  net.JoinHostPort(ip.String(), strconv.Itoa(port)),
				uid:   int(binary.NativeEndian.Uint32(d[64:])),
				inode: strconv.FormatUint(uint64(binary.NativeEndian.Uint32(d[68:])), 10),
			})
		}
	}
}
