//go:build linux

package seccompfilter

import (
	"encoding/binary"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// seccompData lays out a struct seccomp_data for x/net/bpf's VM. Seccomp
// loads native-endian 32-bit words while the VM loads big-endian ones, so
// each word is stored big-endian at the offset seccomp would read it from.
func seccompData(nr, auditArch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))     // low half first (little endian)
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32)) // then the high half
	}
	return b
}

func TestProgramDecisions(t *testing.T) {
	t.Parallel()
	insts, err := Instructions()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	nr := func(name string) uint32 {
		n, ok := native.SyscallNames[name]
		if !ok {
			t.Fatalf("no syscall %q on %s", name, native.Name)
		}
		return uint32(n)
	}
	allow := uint32(seccomp.ActionAllow)
	// foreign is a's audit arch, or b's where a is native.
	foreign := func(a, b *arch.Info) uint32 {
		if a.ID == native.ID {
			return uint32(b.ID)
		}
		return uint32(a.ID)
	}
	cases := []struct {
		name string
		data []byte
		want uint32
	}{
		{"read_allowed", seccompData(nr("read"), uint32(native.ID)), allow},
		{"ptrace_eperm", seccompData(nr("ptrace"), uint32(native.ID)), ErrnoAction(EPERM)},
		{"mount_eperm", seccompData(nr("mount"), uint32(native.ID)), ErrnoAction(EPERM)},
		{"keyctl_eperm", seccompData(nr("keyctl"), uint32(native.ID)), ErrnoAction(EPERM)},
		{"io_uring_setup_eperm", seccompData(nr("io_uring_setup"), uint32(native.ID)), ErrnoAction(EPERM)},
		{"clone3_enosys", seccompData(nr("clone3"), uint32(native.ID)), ErrnoAction(ENOSYS)},
		{"clone_fork_allowed", seccompData(nr("clone"), uint32(native.ID), 0x11), allow},
		{"clone_thread_allowed", seccompData(nr("clone"), uint32(native.ID), 0x3d0f00), allow},
		{"clone_newuser_eperm", seccompData(nr("clone"), uint32(native.ID), cloneNewUser|0x11), ErrnoAction(EPERM)},
		{"clone_newnet_eperm", seccompData(nr("clone"), uint32(native.ID), cloneNewNet), ErrnoAction(EPERM)},
		{"unshare_newuser_eperm", seccompData(nr("unshare"), uint32(native.ID), cloneNewUser), ErrnoAction(EPERM)},
		{"unshare_newns_eperm", seccompData(nr("unshare"), uint32(native.ID), cloneNewNS), ErrnoAction(EPERM)},
		{"unshare_files_allowed", seccompData(nr("unshare"), uint32(native.ID), 0x400), allow},
		{"ioctl_tiocsti_eperm", seccompData(nr("ioctl"), uint32(native.ID), 0, tiocsti), ErrnoAction(EPERM)},
		{"ioctl_tiocsti_high_bits_eperm", seccompData(nr("ioctl"), uint32(native.ID), 0, 1<<32|tiocsti), ErrnoAction(EPERM)},
		{"ioctl_tioclinux_eperm", seccompData(nr("ioctl"), uint32(native.ID), 0, tioclinux), ErrnoAction(EPERM)},
		{"ioctl_tcgets_allowed", seccompData(nr("ioctl"), uint32(native.ID), 0, 0x5401), allow},
		{"foreign_arch_killed", seccompData(20, foreign(arch.I386, arch.X86_64)), ForeignArchAction},
		{"arm32_killed", seccompData(20, foreign(arch.ARM, arch.AARCH64)), ForeignArchAction},
	}
	if native.ID == arch.X86_64.ID {
		cases = append(cases, struct {
			name string
			data []byte
			want uint32
		}{"x32_abi_enosys", seccompData(0x40000000|39, uint32(native.ID)), ErrnoAction(ENOSYS)})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := vm.Run(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
}

func TestNoErrnoZero(t *testing.T) {
	t.Parallel()
	insts, err := Instructions()
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range insts {
		r, ok := in.(bpf.RetConstant)
		if !ok {
			continue
		}
		if r.Val&0xffff0000 == uint32(seccomp.ActionErrno) && r.Val&0xffff == 0 {
			t.Errorf("instruction %d returns errno 0: %v", i, in)
		}
	}
}

func TestProgramBytes(t *testing.T) {
	t.Parallel()
	insts, err := Instructions()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 8*len(insts) {
		t.Fatalf("got %d bytes for %d instructions", len(b), len(insts))
	}
	// The first instruction loads the audit arch: BPF_LD|BPF_W|BPF_ABS, k=4.
	if op, k := binary.NativeEndian.Uint16(b), binary.NativeEndian.Uint32(b[4:]); op != 0x20 || k != offArch {
		t.Errorf("first instruction op=%#x k=%d, want ld [4]", op, k)
	}
}

func TestRulesKnownOnMainArches(t *testing.T) {
	t.Parallel()
	for _, info := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		missing := 0
		for _, r := range Rules() {
			if r.Errno != EPERM && r.Errno != ENOSYS {
				t.Errorf("%s: unexpected errno %d", r.Syscall, r.Errno)
			}
			if _, ok := info.SyscallNames[r.Syscall]; !ok {
				missing++
			}
		}
		// Only legacy calls (uselib, iopl, ioperm, ...) may be absent.
		if missing > 4 {
			t.Errorf("%s: %d rules name unknown system calls", info.Name, missing)
		}
	}
}

// TestInetStreamOnlyDecisions checks the Landlock variant: only TCP
// sockets of the inet families, no listen, no TCP Fast Open; the rest of
// the filter as for bwrap.
func TestInetStreamOnlyDecisions(t *testing.T) {
	t.Parallel()
	vm := newVM(t, Options{InetStreamOnly: true, NoListen: true, OwnProcessOnly: true, NoHostIPC: true})
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	nr := func(name string) uint32 { return uint32(native.SyscallNames[name]) }
	id := uint32(native.ID)
	allow, deny := uint32(seccomp.ActionAllow), ErrnoAction(EACCES)
	const sockDgram, sockRaw, sockNonblockCloexec, afPacket, afNetlink, mptcp = 2, 3, 0x80800, 17, 16, 262
	cases := []struct {
		name string
		data []byte
		want uint32
	}{
		{"tcp4", seccompData(nr("socket"), id, afInet, sockStream, 0), allow},
		{"tcp6_ipproto_tcp", seccompData(nr("socket"), id, afInet6, sockStream, ipprotoTCP), allow},
		{"tcp_nonblock_cloexec", seccompData(nr("socket"), id, afInet, sockStream|sockNonblockCloexec, 0), allow},
		{"tcp_high_bits_ignored", seccompData(nr("socket"), id, 1<<32|afInet, sockStream, 0), allow},
		{"udp", seccompData(nr("socket"), id, afInet, sockDgram, 0), deny},
		{"raw", seccompData(nr("socket"), id, afInet, sockRaw, 1), deny},
		{"mptcp", seccompData(nr("socket"), id, afInet, sockStream, mptcp), deny},
		{"sctp_stream", seccompData(nr("socket"), id, afInet6, sockStream, 132), deny},
		{"unix", seccompData(nr("socket"), id, afUnix, sockStream, 0), deny},
		{"packet", seccompData(nr("socket"), id, afPacket, sockRaw, 0), deny},
		{"netlink", seccompData(nr("socket"), id, afNetlink, sockRaw, 0), deny},
		{"unix_high_bits_inet", seccompData(nr("socket"), id, 2<<32|afUnix, sockStream, 0), deny},
		{"socketpair_allowed", seccompData(nr("socketpair"), id, afUnix, sockStream, 0), allow},
		{"socketpair_seqpacket_cloexec", seccompData(nr("socketpair"), id, afUnix, sockSeqpacket|sockNonblockCloexec, 0), allow},
		{"socketpair_dgram", seccompData(nr("socketpair"), id, afUnix, sockDgram, 0), deny},
		{"socketpair_dgram_cloexec", seccompData(nr("socketpair"), id, afUnix, sockDgram|sockNonblockCloexec, 0), deny},
		{"socketpair_dgram_high_bits", seccompData(nr("socketpair"), id, afUnix, 1<<32|sockDgram, 0), deny},
		{"socketpair_raw", seccompData(nr("socketpair"), id, afUnix, sockRaw, 0), deny},
		{"socketpair_inet", seccompData(nr("socketpair"), id, afInet, sockStream, 0), deny},
		{"listen_refused", seccompData(nr("listen"), id, 3, 16), deny},
		{"bind_refused", seccompData(nr("bind"), id, 3, 0, 16), deny},
		{"sendto_plain", seccompData(nr("sendto"), id, 3, 0, 1, 0), allow},
		{"sendto_fastopen", seccompData(nr("sendto"), id, 3, 0, 1, msgFastOpen), deny},
		{"sendmsg_fastopen", seccompData(nr("sendmsg"), id, 3, 0, msgFastOpen), deny},
		{"ptrace_still_eperm", seccompData(nr("ptrace"), id), ErrnoAction(EPERM)},
		{"prlimit_self", seccompData(nr("prlimit64"), id, 0, 7, 0, 0), allow},
		{"prlimit_other", seccompData(nr("prlimit64"), id, 4242, 7, 0, 0), ErrnoAction(EPERM)},
		{"prlimit_other_high_bits", seccompData(nr("prlimit64"), id, 1<<32|4242, 7), ErrnoAction(EPERM)},
		{"nice_self", seccompData(nr("setpriority"), id, 0, 0, 10), allow},
		{"renice_other", seccompData(nr("setpriority"), id, 0, 4242, 19), ErrnoAction(EPERM)},
		{"renice_every_process_of_the_user", seccompData(nr("setpriority"), id, 2, 0, 19), ErrnoAction(EPERM)},
		{"ionice_self", seccompData(nr("ioprio_set"), id, 1, 0, 0x6000), allow},
		{"ionice_user", seccompData(nr("ioprio_set"), id, 3, 0, 0x6000), ErrnoAction(EPERM)},
		{"sched_idle_other", seccompData(nr("sched_setscheduler"), id, 4242, 5, 0), ErrnoAction(EPERM)},
		{"sched_self", seccompData(nr("sched_setattr"), id, 0, 0, 0), allow},
		{"tiocsti_still_eperm", seccompData(nr("ioctl"), id, 0, tiocsti), ErrnoAction(EPERM)},
	}
	for _, call := range hostIPCCalls {
		if n, ok := native.SyscallNames[call]; ok {
			cases = append(cases, struct {
				name string
				data []byte
				want uint32
			}{call + "_eperm", seccompData(uint32(n), id, 0x5eC1a3, 4096, 0o1600), ErrnoAction(EPERM)})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := vm.Run(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
	ovm := newVM(t, Options{InetStreamOnly: true, NoSockets: true, NoListen: true})
	for _, data := range [][]byte{seccompData(nr("socket"), id, afInet, sockStream, 0), seccompData(nr("socket"), id, afUnix, sockStream, 0)} {
		if got, _ := ovm.Run(data); uint32(got) != deny {
			t.Errorf("NoSockets lets a socket through: %#x", got)
		}
	}
	if got, _ := ovm.Run(seccompData(nr("socketpair"), id, afUnix, sockStream, 0)); uint32(got) != allow {
		t.Errorf("NoSockets refuses socketpair: %#x", got)
	}
	// The bwrap filter (its own network and IPC namespaces) keeps every
	// socket and System V IPC.
	pvm := newVM(t, Options{})
	if got, _ := pvm.Run(seccompData(nr("socket"), id, afInet, sockDgram, 0)); uint32(got) != allow {
		t.Errorf("the default filter refuses UDP sockets: %#x", got)
	}
	if got, _ := pvm.Run(seccompData(nr("shmget"), id, 0, 4096, 0o1600)); uint32(got) != allow {
		t.Errorf("the default filter refuses shmget: %#x", got)
	}
}

// newVM assembles the variant o into a BPF VM.
func newVM(t *testing.T, o Options) *bpf.VM {
	t.Helper()
	insts, err := InstructionsFor(o)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// TestArgumentChecksDoNotSpillOver holds the filter to each call's own
// rules when an argument happens to equal another denied call's number:
// go-seccomp-bpf's program compared the argument it had loaded with the
// numbers of the calls after it, so clone(2) with flags equal to clone3's
// number, or a file created with the mode 0665 (openat2's number on x86_64
// and arm64) under NoSetID, failed with ENOSYS.
func TestArgumentChecksDoNotSpillOver(t *testing.T) {
	t.Parallel()
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	nr := func(name string) uint32 { return uint32(native.SyscallNames[name]) }
	id, allow := uint32(native.ID), uint32(seccomp.ActionAllow)
	cases := []struct {
		name string
		o    Options
		data []byte
		want uint32
	}{
		{"clone_flags_like_clone3", Options{}, seccompData(nr("clone"), id, uint64(nr("clone3"))), allow},
		{"openat_mode_like_openat2", Options{NoSetID: true}, seccompData(nr("openat"), id, 0, 0, 0x40, uint64(nr("openat2"))), allow},
		{"openat_setuid", Options{NoSetID: true}, seccompData(nr("openat"), id, 0, 0, 0x40, 0o4755), ErrnoAction(EPERM)},
		{"prlimit_self_resource_like_clone3", Options{OwnProcessOnly: true}, seccompData(nr("prlimit64"), id, 0, uint64(nr("clone3"))), allow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := newVM(t, tc.o).Run(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
}
