package seccompfilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sort"

	"golang.org/x/net/bpf"
)

// Offsets into struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// Seccomp's return values (SECCOMP_RET_*), Linux's whatever OS builds the
// program.
const (
	retAllow       = 0x7fff0000
	retErrno       = 0x00050000
	retKillProcess = 0x80000000
)

// ErrnoAction is the seccomp return value that fails a call with errno.
// SECCOMP_RET_ERRNO alone carries errno 0, which makes a denied call look
// like a success; the errno must be OR'ed into the low 16 bits.
func ErrnoAction(e Errno) uint32 { return retErrno | uint32(e) }

// ForeignArchAction is what a system call made through a foreign ABI gets:
// the whole process is killed (SIGSYS). The rules name the native
// architecture's numbers, which mean other calls in another ABI.
const ForeignArchAction = uint32(retKillProcess)

// Program returns the filter for the native architecture as the raw bytes of
// a struct sock_filter array in native byte order: the format bwrap reads
// from --seccomp FD and seccomp(2) takes.
func Program() ([]byte, error) { return ProgramFor(Options{}) }

// Options choose a variant of the filter. The zero value is the filter
// of the sandboxes that have a network namespace of their own (bwrap).
type Options struct {
	// InetStreamOnly is for a sandbox with no network namespace of its
	// own (Landlock), where a socket reaches the host's network: socket(2)
	// makes only TCP sockets of AF_INET and AF_INET6 (no UDP, raw, packet,
	// netlink or AF_UNIX sockets, no MPTCP or SCTP), which Landlock's TCP
	// rules then confine; socketpair(2) makes only AF_UNIX stream and
	// seqpacket pairs, which send to their peer only: a datagram socket
	// sends to whatever address each datagram names, a host program's
	// named socket (/dev/log, journald's) or abstract one, which Landlock
	// scopes only from ABI 6 on, and named ones never. TCP Fast Open (a
	// connect inside sendto or sendmsg) is refused too.
	InetStreamOnly bool
	// NoListen refuses listen(2) and bind(2): with InetStreamOnly, a
	// listening socket would be open on every address of the host. A run
	// without listen ports has no TCP port to bind (Landlock refuses
	// each), and a socketpair's socket bound to an abstract name would
	// take that name in this machine's network namespace, before the host
	// program that means to bind it.
	NoListen bool
	// NoSockets refuses socket(2) whatever its arguments (socketpair
	// stays): a sandbox without a network namespace and with the network
	// off needs none.
	NoSockets bool
	// OwnProcessOnly is for a sandbox in this machine's pid namespace
	// (Landlock): the calls that change another process by pid with no
	// ptrace check, only a same-user one (prlimit, setpriority,
	// ioprio_set, sched_setscheduler, sched_setparam, sched_setattr), may
	// change the calling process only. Otherwise the sandbox could set
	// the engine's (or another run's) RLIMIT_CPU to one second, which
	// kills it, its open files to none, or make it idle.
	OwnProcessOnly bool
	// NoSetID refuses to make a file setuid or setgid (chmod, creating
	// one, mknod): in a folder bound through an idmapped mount, what the
	// sandbox makes belongs on disk to the folder's owner, root perhaps,
	// and such a file would run as its owner for whoever runs it on the
	// host (the mount itself is nosuid; the folder's own path is not).
	NoSetID bool
	// NoHostIPC refuses System V IPC (shared memory, message queues,
	// semaphores, and the ipc(2) multiplexer where the architecture has
	// one) and POSIX message queues: a sandbox without an IPC namespace
	// of its own (Landlock) would share this machine's, where an object
	// is found by a number or a name that /proc/sysvipc lists and is
	// guarded by uid and mode only, so a run could read or change another
	// process's of the same uid (the desktop user's, another sandbox's).
	NoHostIPC bool
}

// ProgramFor is Program for the variant o.
func ProgramFor(o Options) ([]byte, error) {
	insts, err := InstructionsFor(o)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assembling seccomp filter: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}

// Instructions assembles Rules for the native architecture. The program
// starts with the foreign-ABI guard (and on x86_64 fails x32 system calls
// with ENOSYS), then checks the rules that compare only the low 32 bits of
// an argument, then the rest, one group per errno; what no rule denies is
// allowed.
func Instructions() ([]bpf.Instruction, error) { return InstructionsFor(Options{}) }

// InstructionsFor is Instructions for the variant o: the socket checks of
// InetStreamOnly come right after the foreign-ABI guard.
func InstructionsFor(o Options) ([]bpf.Instruction, error) {
	if !nativeTable {
		return nil, fmt.Errorf("seccomp filter: no system call table for %s/%s (there is one for linux on amd64, arm64, 386 and arm)", runtime.GOOS, runtime.GOARCH)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		// The low half of an argument is at a different offset on big
		// endian machines; fail closed rather than check the wrong word.
		return nil, errors.New("seccomp filter: big-endian architectures are not supported")
	}
	rules := RulesFor(o)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: ForeignArchAction},
	}
	if x32SyscallBit != 0 {
		// x32 calls come with x86_64's AUDIT_ARCH value and x32SyscallBit
		// in their number, which no rule names: fail every number from
		// that bit up.
		prog = append(prog,
			bpf.LoadAbsolute{Off: offNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1},
			bpf.RetConstant{Val: ErrnoAction(ENOSYS)},
		)
	}
	if o.InetStreamOnly {
		socket, ok := syscallNumber("socket")
		pair, pairOK := syscallNumber("socketpair")
		if !ok || !pairOK {
			return nil, errors.New("seccomp filter: this architecture has no socket or socketpair system call")
		}
		prog = append(prog, inetStreamOnly(socket, pair)...)
	}
	prog = append(prog, low32Checks(rules)...)
	prog = append(prog, bpf.LoadAbsolute{Off: offNr, Size: 4})
	for _, g := range errnoGroups(rules) {
		insts, err := g.instructions()
		if err != nil {
			return nil, err
		}
		prog = append(prog, insts...)
	}
	prog = append(prog, bpf.RetConstant{Val: retAllow})
	for i, in := range prog {
		// A bare SECCOMP_RET_ERRNO means errno 0: the call would silently
		// "succeed". Refuse to build such a program.
		if r, ok := in.(bpf.RetConstant); ok && r.Val == retErrno {
			return nil, fmt.Errorf("seccomp filter: instruction %d returns errno 0", i)
		}
	}
	return prog, nil
}

// low32Checks compiles the MatchLow32 rules: each system call's number is
// loaded again, since a check leaves an argument in the accumulator.
func low32Checks(rules []Rule) []bpf.Instruction {
	var prog []bpf.Instruction
	bySyscall := map[string][]Rule{}
	var names []string
	for _, r := range rules {
		if r.Arg == nil || r.Arg.Op != MatchLow32 {
			continue
		}
		if _, ok := syscallNumber(r.Syscall); !ok {
			continue
		}
		if bySyscall[r.Syscall] == nil {
			names = append(names, r.Syscall)
		}
		bySyscall[r.Syscall] = append(bySyscall[r.Syscall], r)
	}
	sort.Strings(names)
	for _, name := range names {
		rs := bySyscall[name]
		nr, _ := syscallNumber(name)
		prog = append(prog,
			bpf.LoadAbsolute{Off: offNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: uint8(3 * len(rs))},
		)
		for _, r := range rs {
			// Little endian: the low half of args[i] comes first.
			prog = append(prog,
				bpf.LoadAbsolute{Off: offArgs + 8*r.Arg.Index, Size: 4},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(r.Arg.Value), SkipFalse: 1},
				bpf.RetConstant{Val: ErrnoAction(r.Errno)},
			)
		}
	}
	return prog
}

// errnoGroup is the rules of one errno other than the MatchLow32 ones, each
// system call once: those denied whatever their arguments, then those
// denied when an argument has any of some bits set (several rules for a
// call are alternatives).
type errnoGroup struct {
	errno  Errno
	always []uint32
	anyBit []anyBitCall
}

type anyBitCall struct {
	nr   uint32
	args []ArgMatch
}

// errnoGroups groups the rules that are not MatchLow32 by errno, in the
// order each errno first appears. System calls the architecture does not
// have are left out.
func errnoGroups(rules []Rule) []*errnoGroup {
	var groups []*errnoGroup
	byErrno := map[Errno]*errnoGroup{}
	for _, r := range rules {
		if r.Arg != nil && r.Arg.Op == MatchLow32 {
			continue
		}
		nr, ok := syscallNumber(r.Syscall)
		if !ok {
			continue
		}
		g := byErrno[r.Errno]
		if g == nil {
			g = &errnoGroup{errno: r.Errno}
			byErrno[r.Errno] = g
			groups = append(groups, g)
		}
		if r.Arg == nil {
			g.always = append(g.always, nr)
			continue
		}
		i := 0
		for i < len(g.anyBit) && g.anyBit[i].nr != nr {
			i++
		}
		if i == len(g.anyBit) {
			g.anyBit = append(g.anyBit, anyBitCall{nr: nr})
		}
		g.anyBit[i].args = append(g.anyBit[i].args, *r.Arg)
	}
	return groups
}

// instructions checks the group's calls, the number of the call in the
// accumulator, and leaves it there when none is denied.
func (g *errnoGroup) instructions() ([]bpf.Instruction, error) {
	deny := bpf.RetConstant{Val: ErrnoAction(g.errno)}
	var prog []bpf.Instruction
	// A conditional jump skips at most 255 instructions: one return per
	// 255 calls denied outright.
	for rest := g.always; len(rest) > 0; {
		chunk := rest[:min(len(rest), 255)]
		rest = rest[len(chunk):]
		for i, nr := range chunk {
			if i < len(chunk)-1 {
				prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(len(chunk) - 1 - i)})
			} else {
				prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1})
			}
		}
		prog = append(prog, deny)
	}
	for _, c := range g.anyBit {
		var body []bpf.Instruction
		for _, a := range c.args {
			// Little endian: the low half of args[i] comes first. A half
			// of Value with no bit set cannot match.
			lo, hi := uint32(a.Value), uint32(a.Value>>32)
			low := bpf.LoadAbsolute{Off: offArgs + 8*a.Index, Size: 4}
			high := bpf.LoadAbsolute{Off: offArgs + 8*a.Index + 4, Size: 4}
			switch {
			case hi != 0 && lo != 0:
				body = append(body, high, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: hi, SkipTrue: 2},
					low, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: lo, SkipFalse: 1}, deny)
			case hi != 0:
				body = append(body, high, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: hi, SkipFalse: 1}, deny)
			case lo != 0:
				body = append(body, low, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: lo, SkipFalse: 1}, deny)
			}
		}
		if len(body) == 0 {
			continue
		}
		if len(body) >= 255 {
			return nil, fmt.Errorf("seccomp filter: too many argument rules for system call %d (%d)", c.nr, len(c.args))
		}
		// The checks leave an argument in the accumulator: load the
		// number again for the next call.
		body = append(body, bpf.LoadAbsolute{Off: offNr, Size: 4})
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: c.nr, SkipTrue: uint8(len(body))})
		prog = append(prog, body...)
	}
	return prog, nil
}

// Linux socket(2) constants.
const (
	afUnix        = 1
	afInet        = 2
	afInet6       = 10
	sockStream    = 1
	sockSeqpacket = 5
	sockTypeMsk   = 0xf // the low bits of the type; the rest are SOCK_NONBLOCK, SOCK_CLOEXEC
	ipprotoTCP    = 6
)

// inetStreamOnly lets socket(domain, type, protocol) through only for
// domain AF_INET or AF_INET6, type SOCK_STREAM (with any flags) and
// protocol 0 or IPPROTO_TCP, and socketpair(domain, type, ...) only for
// AF_UNIX and SOCK_STREAM or SOCK_SEQPACKET (an AF_UNIX SOCK_RAW socket
// is a datagram one); every other call fails with EACCES. The arguments
// are ints, so only their low 32 bits count (the kernel drops the rest).
func inetStreamOnly(socketNr, socketpairNr uint32) []bpf.Instruction {
	deny := bpf.RetConstant{Val: ErrnoAction(EACCES)}
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: socketNr, SkipTrue: 12},
		bpf.LoadAbsolute{Off: offArgs, Size: 4}, // domain
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: afInet, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: afInet6, SkipTrue: 1},
		deny,
		bpf.LoadAbsolute{Off: offArgs + 8, Size: 4}, // type
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMsk},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: sockStream, SkipTrue: 1},
		deny,
		bpf.LoadAbsolute{Off: offArgs + 16, Size: 4}, // protocol
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ipprotoTCP, SkipTrue: 1},
		deny,
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: socketpairNr, SkipTrue: 8},
		bpf.LoadAbsolute{Off: offArgs, Size: 4}, // domain
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: afUnix, SkipTrue: 1},
		deny,
		bpf.LoadAbsolute{Off: offArgs + 8, Size: 4}, // type
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMsk},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: sockStream, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: sockSeqpacket, SkipTrue: 1},
		deny,
	}
}
