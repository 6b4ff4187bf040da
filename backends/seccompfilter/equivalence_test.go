//go:build linux

package seccompfilter

import (
	"fmt"
	"math/bits"
	"sort"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// syscallInput is one struct seccomp_data.
type syscallInput struct {
	arch, nr uint32
	args     [6]uint64
}

// decide says in Go what the filter of o must answer, from RulesFor and
// go-seccomp-bpf's system call table of the native architecture: the
// judge of both programs.
func decide(o Options, in syscallInput) uint32 {
	native, err := arch.GetInfo("")
	if err != nil {
		panic(err)
	}
	if in.arch != uint32(native.ID) {
		return uint32(seccomp.ActionKillProcess)
	}
	if native.ID == arch.X86_64.ID && in.nr >= uint32(arch.X32.SeccompMask) {
		return libraryErrnoAction(ENOSYS)
	}
	number := func(name string) (uint32, bool) {
		nr, ok := native.SyscallNames[name]
		return uint32(nr), ok
	}
	if nr, _ := number("socket"); o.InetStreamOnly && in.nr == nr {
		domain, typ, protocol := uint32(in.args[0]), uint32(in.args[1]), uint32(in.args[2])
		if domain != afInet && domain != afInet6 || typ&sockTypeMsk != sockStream || protocol != 0 && protocol != ipprotoTCP {
			return libraryErrnoAction(EACCES)
		}
	}
	if nr, _ := number("socketpair"); o.InetStreamOnly && in.nr == nr {
		if domain, typ := uint32(in.args[0]), uint32(in.args[1])&sockTypeMsk; domain != afUnix || typ != sockStream && typ != sockSeqpacket {
			return libraryErrnoAction(EACCES)
		}
	}
	rules := RulesFor(o)
	var low32 []Rule
	for _, r := range rules {
		if r.Arg != nil && r.Arg.Op == MatchLow32 {
			low32 = append(low32, r)
		}
	}
	sort.SliceStable(low32, func(i, j int) bool { return low32[i].Syscall < low32[j].Syscall })
	for _, r := range low32 {
		if nr, ok := number(r.Syscall); ok && in.nr == nr && uint32(in.args[r.Arg.Index]) == uint32(r.Arg.Value) {
			return libraryErrnoAction(r.Errno)
		}
	}
	// The other rules, one errno after the other in the order each first
	// appears among the calls the architecture has.
	var errnos []Errno
	for _, r := range rules {
		if _, ok := number(r.Syscall); ok && (r.Arg == nil || r.Arg.Op != MatchLow32) && !contains(errnos, r.Errno) {
			errnos = append(errnos, r.Errno)
		}
	}
	for _, e := range errnos {
		for _, r := range rules {
			if nr, ok := number(r.Syscall); !ok || r.Errno != e || in.nr != nr || r.Arg != nil && r.Arg.Op == MatchLow32 {
				continue
			}
			if r.Arg == nil || in.args[r.Arg.Index]&r.Arg.Value != 0 {
				return libraryErrnoAction(e)
			}
		}
	}
	return uint32(seccomp.ActionAllow)
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// inputs are the seccomp_data the programs of o are compared on: every
// number from 0 to 1023, the same through the x32 ABI, and the edges of
// the number space, each with argument values that hit and miss every
// argument condition of o in either half of the argument; the numbers of
// calls with argument conditions also with every number of the deny list
// in the arguments those conditions load (a program that compared a stale
// accumulator with the next call's number would show it there) and, for
// socket and socketpair, the families, types and protocols
// InetStreamOnly sorts. All of
// it through the native ABI, and every number with two argument sets
// through the foreign ones.
func inputs(o Options) []syscallInput {
	native, err := arch.GetInfo("")
	if err != nil {
		panic(err)
	}
	rules := RulesFor(o)
	var plain [][6]uint64
	plain = append(plain, [6]uint64{})
	conditional := map[uint32]bool{}
	var indexes []uint32
	for _, r := range rules {
		if r.Arg == nil {
			continue
		}
		if nr, ok := native.SyscallNames[r.Syscall]; ok {
			conditional[uint32(nr)] = true
		}
		if !contains(indexes, r.Arg.Index) {
			indexes = append(indexes, r.Arg.Index)
		}
		v := r.Arg.Value
		lo := v & 0xffffffff
		lowest := v & -v
		highest := uint64(1) << (63 - bits.LeadingZeros64(v))
		for _, a := range []uint64{v, lowest, highest, v | 1<<32, 1<<63 | lo, ^v, ^v &^ (1 << 32), lo << 32, 1 << 32, 0xffffffff_ffffffff} {
			var args [6]uint64
			args[r.Arg.Index] = a
			if !contains(plain, args) {
				plain = append(plain, args)
			}
		}
	}
	withNumbers := plain
	for _, r := range rules {
		nr, ok := native.SyscallNames[r.Syscall]
		if !ok {
			continue
		}
		for _, i := range indexes {
			var args [6]uint64
			args[i] = uint64(nr)
			if !contains(withNumbers, args) {
				withNumbers = append(withNumbers, args)
			}
		}
	}
	var sockets [][6]uint64
	for _, domain := range []uint64{afInet, afInet6, 1, 16, 17, 1<<32 | afInet, 2<<32 | 1} {
		for _, typ := range []uint64{sockStream, sockStream | 0x80800, 2, 3, 5, 0x11, 1<<32 | 2} {
			for _, protocol := range []uint64{0, ipprotoTCP, 17, 132, 262, 1<<32 | 17, 1 << 32} {
				sockets = append(sockets, [6]uint64{domain, typ, protocol})
			}
		}
	}
	socket := uint32(native.SyscallNames["socket"])
	socketpair := uint32(native.SyscallNames["socketpair"])

	var numbers []uint32
	for nr := range uint32(1024) {
		numbers = append(numbers, nr, uint32(arch.X32.SeccompMask)|nr)
	}
	numbers = append(numbers, 0x3fffffff, 0x7fffffff, 0x80000000, 0xbfffffff, 0xfffffffe, 0xffffffff)

	var out []syscallInput
	for _, nr := range numbers {
		argSets := plain
		if conditional[nr] {
			argSets = withNumbers
		}
		if nr == socket || nr == socketpair {
			argSets = append(append([][6]uint64{}, argSets...), sockets...)
		}
		for _, args := range argSets {
			out = append(out, syscallInput{arch: uint32(native.ID), nr: nr, args: args})
		}
		for _, foreign := range []arch.AuditArch{arch.X86_64.ID, arch.AARCH64.ID, arch.I386.ID, arch.ARM.ID, 0, 0xffffffff} {
			if foreign == native.ID {
				continue
			}
			for _, args := range plain[:2] {
				out = append(out, syscallInput{arch: uint32(foreign), nr: nr, args: args})
			}
		}
	}
	return out
}

func (in syscallInput) data() []byte { return seccompData(in.nr, in.arch, in.args[:]...) }

func (in syscallInput) String() string {
	return fmt.Sprintf("arch=%#x nr=%d (%#x) args=%#x", in.arch, in.nr, in.nr, in.args)
}

// TestSameDecisionsAsLibrary runs the program of every Options
// combination and the one go-seccomp-bpf assembled before (library_test.go)
// through x/net/bpf's VM on the same system calls: every answer of the new
// program must be decide's, and the old program's too, but where the old
// one compared a call's argument with the numbers of later calls (the
// library loads the number once, and its argument checks leave an argument
// in the accumulator): those answers, which only ever refuse a call the
// rules allow, are counted and must be the only differences.
func TestSameDecisionsAsLibrary(t *testing.T) {
	t.Parallel()
	for _, o := range allOptions() {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			t.Parallel()
			insts, err := InstructionsFor(o)
			if err != nil {
				t.Fatal(err)
			}
			oldInsts, err := libraryInstructionsFor(o)
			if err != nil {
				t.Fatal(err)
			}
			vm, old := newVMOf(t, insts), newVMOf(t, oldInsts)
			staleOld := 0
			ins := inputs(o)
			for _, in := range ins {
				want := decide(o, in)
				got := run(t, vm, in)
				if got != want {
					t.Errorf("%v: got %#x, want %#x", in, got, want)
				}
				if was := run(t, old, in); was != got {
					if was == uint32(seccomp.ActionAllow) || want != uint32(seccomp.ActionAllow) {
						t.Errorf("%v: the library's program answers %#x, this one %#x (rules: %#x)", in, was, got, want)
					}
					staleOld++
				}
			}
			t.Logf("%d instructions (the library's program: %d), %d inputs, %d refused by the library's program only", len(insts), len(oldInsts), len(ins), staleOld)
		})
	}
}

func newVMOf(t *testing.T, insts []bpf.Instruction) *bpf.VM {
	t.Helper()
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

func run(t *testing.T, vm *bpf.VM, in syscallInput) uint32 {
	t.Helper()
	got, err := vm.Run(in.data())
	if err != nil {
		t.Fatalf("%v: %v", in, err)
	}
	return uint32(got)
}
