package landlock

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// pyPrelude gives Python programs a raw syscall helper.
const pyPrelude = `
import ctypes, os, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return 0 if r != -1 else ctypes.get_errno()
`

// TestEscapeSyscalls checks that seccomp and Landlock hold inside a real
// sandbox: the same calls the bwrap backend refuses, and the host's pid 1,
// which this sandbox sees but may not signal.
func TestEscapeSyscalls(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	prog := pyPrelude + `
import termios
res = {}
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_char_p]
r = libc.ioctl(0, termios.TIOCSTI, b"x"); res["tiocsti"] = ctypes.get_errno() if r == -1 else 0
r = libc.ioctl(0, 0x541c, b"x"); res["tioclinux"] = ctypes.get_errno() if r == -1 else 0
res["mount"] = sc(165, 0, 0, 0, 0, 0)
res["unshare_newuser"] = sc(272, 0x10000000)
res["unshare_newnet"] = sc(272, 0x40000000)
res["clone_newuser"] = sc(56, 0x10000000 | 17, 0, 0, 0, 0)
res["keyctl"] = sc(250, 0, 0, 0, 0, 0)
res["add_key"] = sc(248, 0, 0, 0, 0, 0)
res["io_uring_setup"] = sc(425, 1, 0)
res["ptrace"] = sc(101, 0, 0, 0, 0)
res["bpf"] = sc(321, 0, 0, 0)
res["setns"] = sc(308, 0, 0)
res["clone3"] = sc(435, 0, 0)
res["setuid0"] = sc(105, 0)
for name, path in [("core_pattern", "/proc/sys/kernel/core_pattern"), ("sysrq", "/proc/sysrq-trigger")]:
    try:
        open(path, "w").write("x"); res[name] = 0
    except OSError as e:
        res[name] = e.errno
try:
    os.kill(1, 0); res["signal_pid1"] = 0
except OSError as e:
    res["signal_pid1"] = e.errno
print(" ".join("%s=%d" % kv for kv in sorted(res.items())))
`
	want := map[string]string{
		"tiocsti": "1", "tioclinux": "1", "mount": "1", "unshare_newuser": "1", "unshare_newnet": "1",
		"clone_newuser": "1", "keyctl": "1", "add_key": "1", "io_uring_setup": "1", "ptrace": "1",
		"bpf": "1", "setns": "1", "clone3": "38", "setuid0": "1", "signal_pid1": "1",
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
			for _, k := range []string{"core_pattern", "sysrq"} {
				if got[k] == "0" {
					t.Errorf("%s was writable", k)
				}
			}
		})
	}
}

// TestEscapeWrites tries to write outside the workspace in every way we
// know, in every fs mode, then looks at the host.
func TestEscapeWrites(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		for _, mode := range backends.FsModes {
			t.Run(u.name+"_"+string(mode), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				must(t, os.Symlink(d.outside, filepath.Join(d.ws, "hostlink")))
				rel, err := filepath.Rel(d.ws, d.outside)
				must(t, err)
				etc := fmt.Sprintf("/etc/senclaw-landlock-escape-%s-%s", u.name, mode)
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
for src, dst in [(W + "/ro/file", W + "/hardlink"), (OUT + "/file", W + "/hardlink2")]:
    try: os.link(src, dst)
    except OSError as e: print("link refused", e.errno)
try: os.rename(W + "/ro/file", W + "/moved")
except OSError as e: print("rename refused", e.errno)
try: os.truncate(W + "/ro/file", 0)
except OSError as e: print("truncate refused", e.errno)
for p in [OUT + "/abs", W + "/" + REL + "/dotdot", W + "/hostlink/via_hostlink",
          W + "/inlink/via_inlink", W + "/ro/new", "/proc/self/root" + OUT + "/procself",
          "/proc/1/root" + OUT + "/proc1", "/proc/%%d/root" %% os.getppid() + OUT + "/ppid", ETC,
          "/proc/self/root" + ETC, "/tmp/senclaw-landlock-escape", "/dev/shm/senclaw-landlock-escape"]:
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
				for _, p := range []string{etc, "/tmp/senclaw-landlock-escape", "/dev/shm/senclaw-landlock-escape"} {
					if _, err := os.Lstat(p); err == nil {
						os.Remove(p)
						t.Errorf("wrote %s on the host", p)
					}
				}
			})
		}
	}
}

// TestEscapeLeakedDescriptor: a descriptor the engine holds without
// close-on-exec (as one inherited from a shell would be) never reaches
// the command, so it cannot write through it.
func TestEscapeLeakedDescriptor(t *testing.T) {
	requireLandlock(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	d := newTestDirs(t, u)
	fd, err := syscall.Open(d.outside, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	must(t, err)
	defer syscall.Close(fd)
	r := py(t, b, newSpec(t, u, d.ws), fmt.Sprintf(`import os
try:
    fd = os.open("leak", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=%d)
    print("wrote through the leaked fd")
except OSError as e:
    print("refused", e.errno)
print(sorted(os.listdir("/proc/self/fd")))`, fd))
	if strings.Contains(r.stdout, "wrote") || !strings.Contains(r.stdout, "refused 9") {
		t.Errorf("leaked fd %d: %q %s", fd, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(d.outside, "leak")); err == nil {
		t.Errorf("a file was made outside through a leaked descriptor")
	}
}

// TestEscapeReads checks what each fs mode lets a sandbox read, including
// a sibling of a hidden folder made after the backend was created (the
// sibling set is made anew for each run).
func TestEscapeReads(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		cases := []struct {
			name     string
			mode     backends.FsMode
			readable []string
			hide     bool
		}{
			{"strict", backends.FsStrict, nil, false},
			{"allowlist", backends.FsAllowlist, []string{"allowed"}, false},
			{"open_hidden", backends.FsOpen, []string{"allowed", "public", "newsibling"}, true},
		}
		for _, tc := range cases {
			t.Run(u.name+"_"+tc.name, func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				root := filepath.Dir(d.outside)
				files := map[string]string{
					"secret":     filepath.Join(root, "secret", "data"),
					"allowed":    filepath.Join(root, "allowed", "data"),
					"public":     filepath.Join(root, "public", "data"),
					"hiddenfile": filepath.Join(root, "public", "token"),
				}
				for _, f := range files {
					must(t, os.MkdirAll(filepath.Dir(f), 0o755))
					must(t, os.WriteFile(f, []byte("SECRET"), 0o644))
				}
				spec := newSpec(t, u, d.ws)
				spec.FsMode = tc.mode
				spec.ReadPaths = []string{filepath.Dir(files["allowed"])}
				if tc.hide {
					spec.Hidden = []string{filepath.Dir(files["secret"]), files["hiddenfile"]}
				}
				// Made after the backend and the spec: a sibling of the
				// hidden folder that did not exist when either was made.
				files["newsibling"] = filepath.Join(root, "newsibling", "data")
				must(t, os.MkdirAll(filepath.Dir(files["newsibling"]), 0o755))
				must(t, os.WriteFile(files["newsibling"], []byte("SECRET"), 0o644))
				var prog strings.Builder
				for name, f := range files {
					fmt.Fprintf(&prog, `
try: print(%q, open(%q).read() == "SECRET")
except OSError: print(%q, False)
`, name, f, name)
				}
				r := py(t, b, spec, prog.String())
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				for name := range files {
					want := false
					for _, n := range tc.readable {
						want = want || n == name
					}
					if !strings.Contains(r.stdout, fmt.Sprintf("%s %v", name, map[bool]string{true: "True", false: "False"}[want])) {
						t.Errorf("%s readable should be %v:\n%s", name, want, r.stdout)
					}
				}
			})
		}
	}
}

// TestMaskedInterpretersCannotStart: with Spec.Masked naming the Python
// interpreter, no route starts it (by name, by path, through env, through
// the dynamic loader, or from a copy), in every fs mode.
func TestMaskedInterpretersCannotStart(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	real, err := filepath.EvalSymlinks(python)
	must(t, err)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		for _, mode := range backends.FsModes {
			t.Run(u.name+"_"+string(mode), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				spec := newSpec(t, u, d.ws, "sh", "-c", `
python3 -c 'print("ran python3")'
env python3 -c 'print("ran env python3")'
`+real+` -c 'print("ran by path")'
/lib64/ld-linux-x86-64.so.2 `+real+` -c 'print("ran by the loader")'
cp `+real+` ./py 2>/dev/null && ./py -c 'print("ran a copy")'
cat /usr/bin/env >/dev/null && echo other-programs-readable
sh -c 'echo sh-runs'`)
				spec.FsMode = mode
				spec.Masked = []string{python, real}
				r := run(t, b, spec)
				if strings.Contains(r.stdout, "ran") {
					t.Errorf("a masked interpreter started:\n%s\n%s", r.stdout, r.stderr)
				}
				if !strings.Contains(r.stdout, "sh-runs") || !strings.Contains(r.stdout, "other-programs-readable") {
					t.Errorf("the rest of the system is not usable: %q %s", r.stdout, r.stderr)
				}
			})
		}
	}
	t.Run("in_the_workspace_refused", func(t *testing.T) {
		t.Parallel()
		u := sandboxUsers(t)[0]
		d := newTestDirs(t, u)
		must(t, os.WriteFile(filepath.Join(d.ws, "python3"), []byte("#!/bin/sh\n"), 0o755))
		spec := newSpec(t, u, d.ws, "true")
		spec.Masked = []string{filepath.Join(d.ws, "python3")}
		if p, err := b.Start(t.Context(), spec); err == nil {
			p.Kill()
			p.Wait()
			t.Fatal("a run with a masked program in its workspace started")
		} else if !isRefused(err) {
			t.Fatalf("not a refusal: %v", err)
		}
	})
}
