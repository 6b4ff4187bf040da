package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// TestEscapeSyscalls checks that the seccomp filter and the namespaces hold
// inside a real sandbox.
func TestEscapeSyscalls(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	b := New(Options{})
	// x86_64 numbers; each call must fail with the given errno.
	prog := pyPrelude + `
import termios
res = {}
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_char_p]
r = libc.ioctl(0, termios.TIOCSTI, b"x"); res["tiocsti"] = ctypes.get_errno() if r == -1 else 0
r = libc.ioctl(0, 0x541c, b"x"); res["tioclinux"] = ctypes.get_errno() if r == -1 else 0
res["mount"] = sc(165, 0, 0, 0, 0, 0)
res["unshare_newuser"] = sc(272, 0x10000000)
res["clone_newuser"] = sc(56, 0x10000000 | 17, 0, 0, 0, 0)
res["keyctl"] = sc(250, 0, 0, 0, 0, 0)
res["add_key"] = sc(248, 0, 0, 0, 0, 0)
res["io_uring_setup"] = sc(425, 1, 0)
res["ptrace"] = sc(101, 0, 0, 0, 0)
res["bpf"] = sc(321, 0, 0, 0)
res["setns"] = sc(308, 0, 0)
res["clone3"] = sc(435, 0, 0)
try:
    open("/proc/sys/kernel/core_pattern", "w").write("|/bin/sh")
    res["core_pattern"] = 0
except OSError as e:
    res["core_pattern"] = e.errno
try:
    os.kill(1, 0); res["sees_pid1"] = 0
except OSError as e:
    res["sees_pid1"] = e.errno
print(" ".join("%s=%d" % kv for kv in sorted(res.items())))
`
	want := map[string]string{
		"tiocsti": "1", "tioclinux": "1", "mount": "1", "unshare_newuser": "1", "clone_newuser": "1",
		"keyctl": "1", "add_key": "1", "io_uring_setup": "1", "ptrace": "1", "bpf": "1", "setns": "1",
		"clone3": "38", "sees_pid1": "0",
	}
	for _, u := range sandboxUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			r := py(t, b, newSpec(t, u, d.ws), prog)
			if r.status.Code != 0 {
				t.Fatalf("exit %+v: %s", r.status, r.stderr)
			}
			got := map[string]string{}
			for _, kv := range strings.Fields(r.stdout) {
				k, v, _ := strings.Cut(kv, "=")
				got[k] = v
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: errno %s, want %s", k, got[k], v)
				}
			}
			if got["core_pattern"] == "0" {
				t.Errorf("core_pattern was writable")
			}
		})
	}
}

// TestEscapeWrites tries to write outside the workspace in every way we
// know, in every fs mode, then looks at the host.
func TestEscapeWrites(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		for _, mode := range backends.FsModes {
			t.Run(u.name+"_"+string(mode), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				must(t, os.Symlink(d.outside, filepath.Join(d.ws, "hostlink")))
				rel, err := filepath.Rel(d.ws, d.outside)
				must(t, err)
				etc := fmt.Sprintf("/etc/senclaw-escape-%s-%s", u.name, mode)
				spec := newSpec(t, u, d.ws)
				spec.FsMode = mode
				spec.Mounts = []backends.Mount{{Source: d.outside, Target: "ro", ReadOnly: true}}
				prog := fmt.Sprintf(`import os
W, OUT, ETC, REL = %q, %q, %q, %q
def attempt(p, how="w"):
    try:
        with open(p, how) as f: f.write("escaped")
        print("wrote", p)
    except OSError as e:
        print("refused", p, e.errno)
try: os.symlink(OUT, W + "/inlink")
except OSError: pass
try: os.link(W + "/ro/file", W + "/hardlink")
except OSError as e: print("link refused", e.errno)
for p in [OUT + "/abs", W + "/" + REL + "/dotdot", W + "/hostlink/via_hostlink",
          W + "/inlink/via_inlink", W + "/ro/new", "/proc/self/root" + OUT + "/procself",
          "/proc/1/root" + OUT + "/proc1", ETC, "/proc/self/root" + ETC]:
    attempt(p)
for p in [W + "/ro/file", W + "/hardlink", W + "/hostlink/file"]:
    attempt(p, "a")
attempt(W + "/inside")
`, d.ws, d.outside, etc, rel)
				r := py(t, b, spec, prog)
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				if !strings.Contains(r.stdout, "wrote "+d.ws+"/inside") {
					t.Errorf("could not write inside the workspace:\n%s", r.stdout)
				}
				entries, _ := os.ReadDir(d.outside)
				if len(entries) != 1 {
					t.Errorf("files appeared outside: %v\n%s", entries, r.stdout)
				}
				if b, _ := os.ReadFile(filepath.Join(d.outside, "file")); string(b) != "original" {
					t.Errorf("outside file changed to %q\n%s", b, r.stdout)
				}
				if _, err := os.Lstat(etc); err == nil {
					os.Remove(etc)
					t.Errorf("wrote %s on the host", etc)
				}
			})
		}
	}
}
