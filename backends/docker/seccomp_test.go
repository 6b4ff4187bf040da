package docker

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/senclaw/sandbox/backends/seccompfilter"
)

// TestSeccompProfile_golden pins the profile sent to the daemon and checks
// that every plain deny rule is denied and allowed nowhere.
func TestSeccompProfile_golden(t *testing.T) {
	t.Parallel()
	prof, err := profile()
	if err != nil {
		t.Fatal(err)
	}
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(prof.JSON), &p); err != nil {
		t.Fatal(err)
	}
	pretty, _ := json.MarshalIndent(&p, "", "\t")
	checkGolden(t, filepath.Join("testdata", "seccomp.golden.json"), append(pretty, '\n'))

	if p.DefaultAction != specs.ActErrno {
		t.Fatalf("default action %s, want SCMP_ACT_ERRNO (an allow list)", p.DefaultAction)
	}
	for _, r := range seccompfilter.Rules() {
		if r.Arg != nil {
			continue
		}
		denied := false
		for _, s := range p.Syscalls {
			if !slices.Contains(s.Names, r.Syscall) {
				continue
			}
			if s.Action == specs.ActAllow {
				t.Errorf("%s is still allowed (%v)", r.Syscall, s.Includes)
			}
			if s.Action == specs.ActErrno && s.ErrnoRet != nil && *s.ErrnoRet == uint(r.Errno) {
				denied = true
			}
		}
		if !denied {
			t.Errorf("%s has no explicit denial with errno %d", r.Syscall, r.Errno)
		}
	}
	for _, n := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register"} {
		if !slices.ContainsFunc(p.Syscalls, func(s *seccomp.Syscall) bool { return s.Action == specs.ActErrno && slices.Contains(s.Names, n) }) {
			t.Errorf("%s is not denied", n)
		}
	}
	var ioctl []*seccomp.Syscall
	for _, s := range p.Syscalls {
		if slices.Contains(s.Names, "ioctl") {
			if s.Action != specs.ActAllow || len(s.Args) != 1 || s.Args[0].Op != specs.OpMaskedEqual {
				t.Fatalf("ioctl has an entry other than a conditional allowance: %+v", s)
			}
			ioctl = append(ioctl, s)
		}
	}
	for _, req := range []uint64{0x5412, 0x541c, 1<<32 | 0x5412, 0xffffffff00005412} {
		if allowed(ioctl, req) {
			t.Errorf("ioctl request %#x is allowed", req)
		}
	}
	for _, req := range []uint64{0, 0x541b, 0x5413, 0x5410, 0x541d, 0x5401, 0x80045430, 0xc0185879, 0xffffffff} {
		if !allowed(ioctl, req) {
			t.Errorf("ioctl request %#x is denied", req)
		}
	}
}

// allowed evaluates conditional allowances as libseccomp does: any entry
// whose compares all match allows.
func allowed(entries []*seccomp.Syscall, arg1 uint64) bool {
	for _, e := range entries {
		a := e.Args[0]
		if arg1&a.Value == a.ValueTwo {
			return true
		}
	}
	return false
}

// TestAllowExcept_exhaustiveLow16 checks the trie against every request
// number of the low 16 bits and a sweep of high bits.
func TestAllowExcept_exhaustiveLow16(t *testing.T) {
	t.Parallel()
	var rules []seccompfilter.Rule
	for _, r := range seccompfilter.Rules() {
		if r.Syscall == "ioctl" {
			rules = append(rules, r)
		}
	}
	entries := allowExcept("ioctl", rules)
	denied := map[uint64]bool{}
	for _, r := range rules {
		denied[r.Arg.Value] = true
	}
	for v := uint64(0); v < 1<<16; v++ {
		for _, high := range []uint64{0, 1 << 20, 1 << 31, 0xabcd << 32} {
			if got := allowed(entries, v|high); got == denied[(v|high)&0xffffffff] {
				t.Fatalf("request %#x: allowed=%v", v|high, got)
			}
		}
	}
}
