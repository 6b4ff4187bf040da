package unixguard_test

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/senclaw/sandbox/backends/unixguard"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestProgramDecides runs the filter in a BPF interpreter on the system
// calls it must tell apart (the kernel runs it for real in the other
// tests).
func TestProgramDecides(t *testing.T) {
	t.Parallel()
	prog, err := unixguard.Program()
	if err != nil {
		t.Fatal(err)
	}
	insts := make([]bpf.Instruction, len(prog))
	for i, f := range prog {
		insts[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	native := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		native = unix.AUDIT_ARCH_AARCH64
	}
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	const allow, notify, kill = unix.SECCOMP_RET_ALLOW, unix.SECCOMP_RET_USER_NOTIF, unix.SECCOMP_RET_KILL_PROCESS
	type call struct {
		name string
		arch uint32
		nr   uint32
		args [2]uint64
		want uint32
	}
	cases := []call{
		{"connect_goes_to_the_engine", native, unix.SYS_CONNECT, [2]uint64{3, 0}, notify},
		{"read_is_left_alone", native, unix.SYS_READ, [2]uint64{0, 0}, allow},
		{"unix_stream", native, unix.SYS_SOCKET, [2]uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK}, allow},
		{"unix_seqpacket", native, unix.SYS_SOCKET, [2]uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}, allow},
		{"unix_dgram", native, unix.SYS_SOCKET, [2]uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}, errno(unix.EACCES)},
		{"unix_raw_is_dgram", native, unix.SYS_SOCKET, [2]uint64{unix.AF_UNIX, unix.SOCK_RAW}, errno(unix.EACCES)},
		{"unix_dgram_high_bits", native, unix.SYS_SOCKET, [2]uint64{1<<32 | unix.AF_UNIX, 1<<40 | unix.SOCK_DGRAM}, errno(unix.EACCES)},
		{"unix_dgram_pair", native, unix.SYS_SOCKETPAIR, [2]uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, errno(unix.EACCES)},
		{"unix_stream_pair", native, unix.SYS_SOCKETPAIR, [2]uint64{unix.AF_UNIX, unix.SOCK_STREAM}, allow},
		{"inet_dgram", native, unix.SYS_SOCKET, [2]uint64{unix.AF_INET, unix.SOCK_DGRAM}, allow},
		{"second_listener", native, unix.SYS_SECCOMP, [2]uint64{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC}, errno(unix.EBUSY)},
		{"filter_without_listener", native, unix.SYS_SECCOMP, [2]uint64{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC}, allow},
		{"foreign_abi_is_killed", 0x40000003, unix.SYS_CONNECT, [2]uint64{3, 0}, kill},
	}
	if runtime.GOARCH == "amd64" {
		cases = append(cases, call{"x32_connect_fails", native, 0x40000000 | unix.SYS_CONNECT, [2]uint64{3, 0}, errno(unix.ENOSYS)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The interpreter loads words big-endian, as from a packet; the
			// kernel loads them natively: each word is laid out so that
			// both read the same value.
			data := make([]byte, 64)
			binary.BigEndian.PutUint32(data[0:], c.nr)
			binary.BigEndian.PutUint32(data[4:], c.arch)
			for i, a := range c.args {
				binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
				binary.BigEndian.PutUint32(data[20+8*i:], uint32(a>>32))
			}
			got, err := vm.Run(data)
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != c.want {
				t.Errorf("got %#x, want %#x", uint32(got), c.want)
			}
		})
	}
}
