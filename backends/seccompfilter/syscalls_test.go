//go:build linux

package seccompfilter

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// allOptions is every combination of Options.
func allOptions() []Options {
	var out []Options
	for m := range 32 {
		out = append(out, Options{
			InetStreamOnly: m&1 != 0, NoListen: m&2 != 0, NoSockets: m&4 != 0,
			OwnProcessOnly: m&8 != 0, NoSetID: m&16 != 0,
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
	used := map[string]bool{"socket": true}
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
