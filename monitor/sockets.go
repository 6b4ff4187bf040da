package monitor

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"

	gnet "github.com/shirou/gopsutil/v4/net"
	"github.com/shirou/gopsutil/v4/process"
)

// Holder is a process as people recognise it: what it runs and from where.
type Holder struct {
	Pid int `json:"pid"`
	// Command is its command line, cut to MaxCommandBytes.
	Command string `json:"command"`
	// Cwd is its working directory and Exe its executable, "" when they
	// cannot be read (another user's process).
	Cwd string `json:"cwd,omitempty"`
	Exe string `json:"exe,omitempty"`
}

// Describe reads pid's command line, working directory and executable.
func Describe(ctx context.Context, pid int) (Holder, error) {
	p := &process.Process{Pid: int32(pid)}
	h := Holder{Pid: pid}
	argv, err := p.CmdlineSliceWithContext(ctx)
	if err != nil {
		return h, fmt.Errorf("reading process %d: %w", pid, err)
	}
	h.Command = commandLine(argv)
	if h.Command == "" {
		if name, err := p.NameWithContext(ctx); err == nil {
			h.Command = "[" + name + "]"
		}
	}
	h.Cwd, _ = p.CwdWithContext(ctx)
	h.Exe, _ = p.ExeWithContext(ctx)
	return h, nil
}

// PortHolder finds the process on this machine that listens on TCP port
// (on any local address); ok is false when none does, or when the
// listener's process cannot be told (another user's, with no right to
// read its descriptors). It reads the socket tables with gopsutil.
func PortHolder(ctx context.Context, port int) (h Holder, ok bool, err error) {
	conns, err := gnet.ConnectionsWithoutUidsWithContext(ctx, "tcp")
	if err != nil {
		return Holder{}, false, fmt.Errorf("listing sockets: %w", err)
	}
	for _, c := range conns {
		if c.Status != "LISTEN" || int(c.Laddr.Port) != port || c.Pid <= 0 {
			continue
		}
		h, err := Describe(ctx, int(c.Pid))
		if err != nil {
			return Holder{Pid: int(c.Pid)}, true, nil
		}
		return h, true, nil
	}
	return Holder{}, false, nil
}

// Socket is one socket of a process.
type Socket struct {
	Pid int `json:"pid"`
	// Kind is tcp4, tcp6, udp4, udp6 or unix.
	Kind string `json:"kind"`
	// Local and Remote are HOST:PORT (a path for a unix socket); Remote
	// is empty for a socket that is not connected.
	Local  string `json:"local"`
	Remote string `json:"remote,omitempty"`
	// State is the TCP state (LISTEN, ESTABLISHED, TIME_WAIT, ...), or
	// NONE for sockets without one.
	State string `json:"state"`
}

// Listening reports whether the socket waits for connections.
func (s Socket) Listening() bool { return s.State == "LISTEN" }

// Sockets lists the sockets of pids, listening ones first, at most max of
// them; truncated says whether there were more. It reads each process's
// descriptors and its own network namespace's tables (a sandboxed
// process's sockets are in its namespace, not the host's) with gopsutil.
func Sockets(ctx context.Context, pids []int, max int) (out []Socket, truncated bool) {
	for _, pid := range pids {
		conns, err := gnet.ConnectionsPidWithoutUidsWithContext(ctx, "all", int32(pid))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, c := range conns {
			out = append(out, socketOf(pid, c))
		}
	}
	slices.SortStableFunc(out, func(a, b Socket) int {
		switch {
		case a.Listening() && !b.Listening():
			return -1
		case b.Listening() && !a.Listening():
			return 1
		}
		return 0
	})
	if out == nil {
		out = []Socket{}
	}
	if len(out) > max {
		return out[:max], true
	}
	return out, false
}

func socketOf(pid int, c gnet.ConnectionStat) Socket {
	s := Socket{Pid: pid, State: c.Status}
	if s.State == "" {
		s.State = "NONE"
	}
	switch {
	case c.Family == syscall.AF_UNIX:
		s.Kind = "unix"
		s.Local, s.Remote = c.Laddr.IP, c.Raddr.IP
		return s
	case c.Type == syscall.SOCK_DGRAM:
		s.Kind = "udp"
	default:
		s.Kind = "tcp"
	}
	if c.Family == syscall.AF_INET6 {
		s.Kind += "6"
	} else {
		s.Kind += "4"
	}
	s.Local = net.JoinHostPort(c.Laddr.IP, strconv.Itoa(int(c.Laddr.Port)))
	if c.Raddr.Port != 0 {
		s.Remote = net.JoinHostPort(c.Raddr.IP, strconv.Itoa(int(c.Raddr.Port)))
	}
	return s
}

// ListensOn reports whether a process of pids listens on TCP port, in its
// own network namespace (a sandboxed server's is not the host's). It reads
// only those processes' descriptors and tables, so a supervisor can watch
// a server come up every few milliseconds without connecting to it.
func ListensOn(ctx context.Context, pids []int, port int) bool {
	for _, pid := range pids {
		conns, err := gnet.ConnectionsPidWithoutUidsWithContext(ctx, "tcp", int32(pid))
		if err != nil {
			continue
		}
		for _, c := range conns {
			if c.Status == "LISTEN" && int(c.Laddr.Port) == port {
				return true
			}
		}
	}
	return false
}
