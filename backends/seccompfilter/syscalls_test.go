//go:build linux

package seccompfilter

import (
	"slices"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// allOptions is every combination of Options.
func allOptions() []Options {
	var out []Options
	for m := range 32 {
		// NoHostIPC goes with OwnProcessOnly, as in the Landlock
		// backend: its rules deny calls outright that no other option
		// names, and another bit would double TestSameDecisionsAsLibrary.
		out = append(out, Options{
			InetStreamOnly: m&1 != 0, NoListen: m&2 != 0, NoSockets: m&4 != 0,
			OwnProcessOnly: m&8 != 0, NoSetID: m&16 != 0, NoHostIPC: m&8 != 0,
		})
	}
	return out
}

// TestSyscallTable holds syscallNumber to go-seccomp-bpf's table of the
// native architecture: every name the rules (of every variant) or the
// socket checks use has the library's number, or is missing from both;
// syscallNumber knows no other name.
func TestSyscallTable(t *testing.T) {
	t.Parallel()
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{"socket": true, "socketpair": true}
	for _, o := range allOptions() {
		for _, r := range RulesFor(o) {
			used[r.Syscall] = true
		}
	}
	for name := range used {
		want, wantOK := native.SyscallNames[name]
		got, ok := syscallNumber(name)
		if ok != wantOK || ok && got != uint32(want) {
			t.Errorf("%s on %s: got %d, %v; the library has %d, %v", name, native.Name, got, ok, want, wantOK)
		}
	}
	for name := range native.SyscallNames {
		if _, ok := syscallNumber(name); ok && !used[name] {
			t.Errorf("syscallNumber knows %q, which no rule uses", name)
		}
	}
}

// TestHostIPCCallsAreAll holds NoHostIPC's list to every System V IPC
// and POSIX message queue call that go-seccomp-bpf's tables name on the
// architectures the filter supports (the ipc(2) multiplexer of i386
// included), so that a call added to an ABI cannot slip past it.
func TestHostIPCCallsAreAll(t *testing.T) {
	t.Parallel()
	for _, info := range []*arch.Info{arch.X86_64, arch.I386, arch.AARCH64, arch.ARM} {
		for name := range info.SyscallNames {
			ipc := name == "ipc" || strings.HasPrefix(name, "mq_")
			for _, p := range []string{"shm", "msg", "sem"} {
				ipc = ipc || strings.HasPrefix(name, p)
			}
			if ipc && !slices.Contains(hostIPCCalls, name) {
				t.Errorf("%s has %s, which NoHostIPC does not refuse", info.Name, name)
			}
		}
	}
	if _, ok := arch.I386.SyscallNames["ipc"]; !ok {
		t.Error("go-seccomp-bpf's i386 table has no ipc")
	}
}
