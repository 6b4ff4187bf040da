//go:build linux

package seccompfilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// This file keeps the program as InstructionsFor built it up to commit
// 1b2a1ca, with github.com/elastic/go-seccomp-bpf assembling the policy
// and providing the system call tables, for the tests to compare against.
// It is a test file so that the library stays out of the binary, whose
// start it slowed down (its arch package builds maps of every
// architecture's system calls when the process starts).

// libraryInstructionsFor is InstructionsFor of commit 1b2a1ca.
func libraryInstructionsFor(o Options) ([]bpf.Instruction, error) {
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
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}
	if o.InetStreamOnly {
		nr, ok := info.SyscallNames["socket"]
		pair, pairOK := info.SyscallNames["socketpair"]
		if !ok || !pairOK {
			return nil, errors.New("seccomp filter: this architecture has no socket or socketpair system call")
		}
		prog = append(prog, inetStreamOnly(uint32(nr|info.SeccompMask), uint32(pair|info.SeccompMask))...)
	}
	prog = append(prog, libraryLow32Checks(info, rules)...)

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

// libraryLow32Checks compiles the MatchLow32 rules by hand, because go-seccomp-bpf
// always compares all 64 bits of an argument.
func libraryLow32Checks(info *arch.Info, rules []Rule) []bpf.Instruction {
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
				bpf.RetConstant{Val: libraryErrnoAction(r.Errno)},
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
			g = &seccomp.SyscallGroup{Action: seccomp.Action(libraryErrnoAction(r.Errno))}
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

// libraryErrnoAction is ErrnoAction in the library's words.
func libraryErrnoAction(e Errno) uint32 { return uint32(seccomp.ActionErrno) | uint32(e) }

// TestKernelValues holds the seccomp return values, the audit arch and the
// x32 bit to the library's.
func TestKernelValues(t *testing.T) {
	t.Parallel()
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	x32 := uint32(0)
	if native.ID == arch.X86_64.ID {
		x32 = uint32(arch.X32.SeccompMask)
	}
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"allow", retAllow, uint32(seccomp.ActionAllow)},
		{"errno", retErrno, uint32(seccomp.ActionErrno)},
		{"EPERM", ErrnoAction(EPERM), libraryErrnoAction(EPERM)},
		{"kill process", ForeignArchAction, uint32(seccomp.ActionKillProcess)},
		{"audit arch", auditArch, uint32(native.ID)},
		{"x32 bit", x32SyscallBit, x32},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %#x, the library has %#x", c.name, c.got, c.want)
		}
	}
}

// BenchmarkInstructionsFor times building the bwrap and Landlock filters,
// by InstructionsFor and as go-seccomp-bpf assembled them.
func BenchmarkInstructionsFor(b *testing.B) {
	for _, v := range []struct {
		name string
		o    Options
	}{
		{"bwrap", Options{}},
		{"landlock", Options{InetStreamOnly: true, NoListen: true, OwnProcessOnly: true}},
	} {
		for _, build := range []struct {
			name string
			f    func(Options) ([]bpf.Instruction, error)
		}{{"x-net-bpf", InstructionsFor}, {"go-seccomp-bpf", libraryInstructionsFor}} {
			b.Run(v.name+"/"+build.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := build.f(v.o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
