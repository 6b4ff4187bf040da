package unixguard

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Offsets into struct seccomp_data; the low half of an argument comes
// first on the little-endian architectures the guard supports.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
)

// The socket types AF_UNIX may still make: both refuse an address on send.
const sockTypeMask = 0xf

// Program is the guard's seccomp filter, loaded in front of the sandboxed
// command (see the package doc): connect() goes to the engine, AF_UNIX
// datagram sockets are refused, a second listener is refused, x32 calls
// fail and a foreign ABI kills the process. Everything else is left to
// the sandbox's base filter.
func Program() ([]unix.SockFilter, error) { return programFor(false) }

// programFor is Program; with inet (Policy.Inet), bind() and listen() go
// to the engine too.
func programFor(inet bool) ([]unix.SockFilter, error) {
	if !archSupported {
		return nil, fmt.Errorf("the Unix socket guard does not support this architecture")
	}
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	errno := func(e unix.Errno) bpf.RetConstant {
		return bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(e)}
	}
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if x32Bit != 0 {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			errno(unix.ENOSYS))
	}
	taken := []uint32{unix.SYS_CONNECT}
	if inet {
		taken = append(taken, unix.SYS_BIND, unix.SYS_LISTEN)
	}
	for _, nr := range taken {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_USER_NOTIF})
	}
	p = append(p,
		// socket and socketpair share their first two arguments.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipTrue: 3},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKETPAIR, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SECCOMP, SkipTrue: 9},
		allow,
		// socket / socketpair: AF_UNIX only as stream or seqpacket.
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.AF_UNIX, SkipTrue: 4},
		bpf.LoadAbsolute{Off: offArg1, Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SOCK_SEQPACKET, SkipTrue: 1},
		allow,
		errno(unix.EACCES),
		// seccomp: no filter with a listener of its own.
		bpf.LoadAbsolute{Off: offArg1, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, SkipFalse: 1},
		errno(unix.EBUSY),
		allow,
	)
	raw, err := bpf.Assemble(p)
	if err != nil {
		return nil, fmt.Errorf("assembling the Unix socket guard's filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}
