package docker

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/senclaw/sandbox/backends/seccompfilter"
)

// defaultProfileJSON is Docker's default seccomp profile, copied from
// github.com/moby/profiles/seccomp v0.1.0 (default.json). It is embedded
// rather than generated because DefaultProfile only builds on Linux, while
// the backend also drives Docker Desktop from macOS and Windows; a Linux
// test checks the copy still equals DefaultProfile().
//
//go:embed seccomp_default.json
var defaultProfileJSON []byte

// profile is the seccomp profile every container runs under, as the JSON
// the daemon takes in SecurityOpt, and its digest for the config hash.
var profile = sync.OnceValues(func() (profileJSON, error) {
	var base seccomp.Seccomp
	if err := json.Unmarshal(defaultProfileJSON, &base); err != nil {
		return profileJSON{}, fmt.Errorf("reading docker's default seccomp profile: %w", err)
	}
	p := extendProfile(&base, seccompfilter.Rules())
	data, err := json.Marshal(p)
	if err != nil {
		return profileJSON{}, fmt.Errorf("encoding the seccomp profile: %w", err)
	}
	sum := sha256.Sum256(data)
	return profileJSON{JSON: string(data), Digest: hex.EncodeToString(sum[:8])}, nil
})

type profileJSON struct {
	JSON   string
	Digest string
}

// extendProfile returns Docker's default profile with SenClaw's deny list
// on top, so a container is never more exposed than a bwrap sandbox.
//
// Docker's profile is an allow list (default action: EPERM). A rule without
// an argument condition is applied by taking the call out of every entry
// and adding an explicit denial with the rule's errno (ENOSYS for clone3 so
// libc falls back to clone). This closes io_uring, which Docker 20.10's
// built-in profile still allows.
//
// Rules with an argument condition matter only for calls the default
// profile allows unconditionally (ioctl). A conditional denial next to an
// unconditional allowance has no effect in libseccomp (the allowance wins;
// the tests saw TIOCSTI pass), so such a call loses its unconditional
// allowance and is allowed instead by conditions that exclude the denied
// forms (see allowExcept); the default action denies the rest with EPERM.
// Calls the default profile allows only with capabilities we drop
// (unshare, setns, mount, ...) or only without namespace flags (clone)
// stay as Docker restricts them, which is at least as strict as our rule.
func extendProfile(base *seccomp.Seccomp, rules []seccompfilter.Rule) *seccomp.Seccomp {
	p := *base
	p.Syscalls = nil
	conditional := map[string][]seccompfilter.Rule{}
	remove := map[string]bool{}
	for _, r := range rules {
		if r.Arg == nil {
			remove[r.Syscall] = true
		}
	}
	for _, s := range base.Syscalls {
		if s.Action == specs.ActAllow && len(s.Args) == 0 && s.Includes == nil && s.Excludes == nil {
			for _, r := range rules {
				if r.Arg != nil && slices.Contains(s.Names, r.Syscall) && !remove[r.Syscall] {
					conditional[r.Syscall] = append(conditional[r.Syscall], r)
				}
			}
		}
	}
	for _, s := range base.Syscalls {
		c := *s
		c.Names = slices.DeleteFunc(slices.Clone(s.Names), func(n string) bool {
			return remove[n] || (len(conditional[n]) > 0 && s.Action == specs.ActAllow && len(s.Args) == 0)
		})
		if len(c.Names) > 0 {
			p.Syscalls = append(p.Syscalls, &c)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(conditional)) {
		p.Syscalls = append(p.Syscalls, allowExcept(name, conditional[name])...)
	}
	byErrno := map[seccompfilter.Errno][]string{}
	for _, r := range rules {
		if r.Arg == nil {
			byErrno[r.Errno] = append(byErrno[r.Errno], r.Syscall)
		}
	}
	for _, e := range slices.Sorted(maps.Keys(byErrno)) {
		names := slices.Compact(slices.Sorted(slices.Values(byErrno[e])))
		ret := uint(e)
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{Names: names, Action: specs.ActErrno, ErrnoRet: &ret},
			Comment:      "senclaw: denied as in the bwrap sandboxes",
		})
	}
	return &p
}

// allowExcept allows name except in the forms rules deny, as allow entries
// of libseccomp's masked-equal compares (value is the mask, valueTwo the
// datum). Forms it cannot express are denied whole (fail closed): then
// name gets no allowance at all.
func allowExcept(name string, rules []seccompfilter.Rule) []*seccomp.Syscall {
	index, op := rules[0].Arg.Index, rules[0].Arg.Op
	for _, r := range rules {
		if r.Arg.Index != index || r.Arg.Op != op {
			return nil
		}
	}
	entry := func(mask, datum uint64) *seccomp.Syscall {
		return &seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{
				Names: []string{name}, Action: specs.ActAllow,
				Args: []specs.LinuxSeccompArg{{Index: uint(index), Op: specs.OpMaskedEqual, Value: mask, ValueTwo: datum}},
			},
			Comment: "senclaw: " + name + " allowed except " + rules[0].Why,
		}
	}
	if op == seccompfilter.MatchAnyBit {
		var bits uint64
		for _, r := range rules {
			bits |= r.Arg.Value
		}
		return []*seccomp.Syscall{entry(bits, 0)} // none of the bits set
	}
	// MatchLow32: allow every low-32-bit value but the denied ones. Walk
	// the binary trie of the denied values from bit 31 down; each branch
	// off a denied value's path holds no denied value, and is allowed as
	// one compare of the bits decided so far. The high 32 bits are never
	// compared, as the kernel ignores them.
	var denied []uint64
	for _, r := range rules {
		denied = append(denied, r.Arg.Value&0xffffffff)
	}
	var out []*seccomp.Syscall
	var walk func(bit int, prefix uint64, values []uint64)
	walk = func(bit int, prefix uint64, values []uint64) {
		if bit < 0 {
			return
		}
		b := uint64(1) << bit
		mask := uint64(0xffffffff) &^ (b - 1)
		var ones, zeros []uint64
		for _, v := range values {
			if v&b != 0 {
				ones = append(ones, v)
			} else {
				zeros = append(zeros, v)
			}
		}
		for _, side := range []struct {
			datum uint64
			vals  []uint64
		}{{prefix, zeros}, {prefix | b, ones}} {
			if len(side.vals) == 0 {
				out = append(out, entry(mask, side.datum))
			} else {
				walk(bit-1, side.datum, side.vals)
			}
		}
	}
	walk(31, 0, slices.Compact(slices.Sorted(slices.Values(denied))))
	return out
}
