package seccompfilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// Offsets into struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// ErrnoAction is the seccomp return value that fails a call with errno.
// go-seccomp-bpf's ActionErrno alone carries errno 0, which makes a denied
// call look like a success; the errno must be OR'ed into the low 16 bits.
func ErrnoAction(e Errno) uint32 { return uint32(seccomp.ActionErrno) | uint32(e) }

// ForeignArchAction is what a system call made through a foreign ABI gets:
// the whole process is killed (SIGSYS). go-seccomp-bpf alone would apply
// the default action (allow) to them.
const ForeignArchAction = uint32(seccomp.ActionKillProcess)

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
	// rules then confine; socketpair(2) stays. TCP Fast Open (a connect
	// inside sendto or sendmsg) is refused too.
	InetStreamOnly bool
	// NoListen refuses listen(2): with InetStreamOnly, a listening socket
	// would be open on every address of the host.
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
// starts with the foreign-ABI guard, then checks the rules that compare only
// the low 32 bits of an argument, then go-seccomp-bpf's program for the rest
// (which also fails x32 system calls with ENOSYS on x86_64).
func Instructions() ([]bpf.Instruction, error) { return InstructionsFor(Options{}) }

// InstructionsFor is Instructions for the variant o: the socket checks of
// InetStreamOnly come right after the foreign-ABI guard.
func InstructionsFor(o Options) ([]bpf.Instruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		// The low half of an argument is at a different offset on big
		// endian machines; fail closed rather than check the wrong word.
		return nil, errors.New("seccomp filter: big-endian architectures are not supported")
	}
	rules := RulesFor(o)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: ForeignArchAction},
	}
	if o.InetStreamOnly {
		nr, ok := info.SyscallNames["socket"]
		if !ok {
			return nil, errors.New("seccomp filter: this architecture has no socket system call")
		}
		prog = append(prog, inetStreamOnly(uint32(nr|info.SeccompMask))...)
	}
	prog = append(prog, low32Checks(info, rules)...)

	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: libraryGroups(info, rules)}
	lib, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assembling seccomp policy: %w", err)
	}
	prog = append(prog, lib...)
	for i, in := range prog {
		// A bare SECCOMP_RET_ERRNO means errno 0: the call would silently
		// "succeed". Refuse to build such a program.
		if r, ok := in.(bpf.RetConstant); ok && r.Val == uint32(seccomp.ActionErrno) {
			return nil, fmt.Errorf("seccomp filter: instruction %d returns errno 0", i)
		}
	}
	return prog, nil
}

// low32Checks compiles the MatchLow32 rules by hand, because go-seccomp-bpf
// always compares all 64 bits of an argument.
func low32Checks(info *arch.Info, rules []Rule) []bpf.Instruction {
	var prog []bpf.Instruction
	bySyscall := map[string][]Rule{}
	var names []string
	for _, r := range rules {
		if r.Arg == nil || r.Arg.Op != MatchLow32 {
			continue
		}
		if _, ok := info.SyscallNames[r.Syscall]; !ok {
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
		nr := uint32(info.SyscallNames[name] | info.SeccompMask)
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

// libraryGroups turns the other rules into go-seccomp-bpf groups, one per
// errno. System calls the architecture does not have are left out.
func libraryGroups(info *arch.Info, rules []Rule) []seccomp.SyscallGroup {
	groups := map[Errno]*seccomp.SyscallGroup{}
	var order []Errno
	for _, r := range rules {
		if r.Arg != nil && r.Arg.Op == MatchLow32 {
			continue
		}
		if _, ok := info.SyscallNames[r.Syscall]; !ok {
			continue
		}
		g := groups[r.Errno]
		if g == nil {
			g = &seccomp.SyscallGroup{Action: seccomp.Action(ErrnoAction(r.Errno))}
			groups[r.Errno] = g
			order = append(order, r.Errno)
		}
		if r.Arg == nil {
			g.Names = append(g.Names, r.Syscall)
			continue
		}
		g.NamesWithCondtions = append(g.NamesWithCondtions, seccomp.NameWithConditions{
			Name: r.Syscall,
			Conditions: seccomp.ArgumentConditions{{
				Argument: r.Arg.Index, Operation: seccomp.BitsSet, Value: r.Arg.Value,
			}},
		})
	}
	out := make([]seccomp.SyscallGroup, 0, len(order))
	for _, e := range order {
		out = append(out, *groups[e])
	}
	return out
}

// Linux socket(2) constants.
const (
	afInet      = 2
	afInet6     = 10
	sockStream  = 1
	sockTypeMsk = 0xf // the low bits of the type; the rest are SOCK_NONBLOCK, SOCK_CLOEXEC
	ipprotoTCP  = 6
)

// inetStreamOnly lets socket(domain, type, protocol) through only for
// domain AF_INET or AF_INET6, type SOCK_STREAM (with any flags) and
// protocol 0 or IPPROTO_TCP; every other socket fails with EACCES. The
// arguments are ints, so only their low 32 bits count (the kernel drops
// the rest).
func inetStreamOnly(socketNr uint32) []bpf.Instruction {
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
	}
}
