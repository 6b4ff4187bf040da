// Package escapetest holds the escape attempts that backends' tests run
// inside a real sandbox.
//
// Each program tries every route we know and prints what happened, and a
// check compares that, and the host, with what must hold. The bwrap and
// landlock backends' tests start them their own way and add what differs
// between backends.
package escapetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Python is the system interpreter (not a pyenv shim from the engine's
// PATH, which a sandbox could not see anyway).
const Python = "/usr/bin/python3"

// PyPrelude gives Python programs a raw syscall helper, sc(nr, args...),
// which returns 0 or the errno.
const PyPrelude = `
import ctypes, os, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return 0 if r != -1 else ctypes.get_errno()
`

// Syscalls makes, on x86_64, each system call a sandbox must refuse and
// prints "name=errno" for each (0: it worked); the writes to /proc files
// and a signal to pid 1 too.
const Syscalls = PyPrelude + `
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

// SyscallsWant is the errno each call of Syscalls must get (EPERM, or
// ENOSYS for clone3, which seccomp cannot look into). Whether pid 1 may
// be signalled depends on the backend: its own init under bwrap, the
// host's under Landlock.
func SyscallsWant() map[string]string {
	return map[string]string{
		"tiocsti": "1", "tioclinux": "1", "mount": "1", "unshare_newuser": "1", "unshare_newnet": "1",
		"clone_newuser": "1", "keyctl": "1", "add_key": "1", "io_uring_setup": "1", "ptrace": "1",
		"bpf": "1", "setns": "1", "clone3": "38",
	}
}

// CheckSyscalls compares the output of Syscalls with want; the /proc
// writes and setuid(0) must have failed, with whatever errno (EINVAL in
// a user namespace where uid 0 is not mapped, EPERM elsewhere).
func CheckSyscalls(t *testing.T, stdout string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, kv := range strings.Fields(stdout) {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: errno %s, want %s", k, got[k], v)
		}
	}
	for _, k := range []string{"core_pattern", "sysrq", "setuid0"} {
		if got[k] == "0" || got[k] == "" {
			t.Errorf("%s was allowed (%q)", k, got[k])
		}
	}
}

// Writes tries to write outside the workspace ws by every route we know:
// absolute paths, "..", symlinks made before and inside the run, hard
// links, rename and truncate of a read-only mount's file (mounted at
// ws/ro from outside), /proc/self/root and /proc/PID/root, /etc (etc is
// a path there), the shared /tmp and /dev/shm; rel is outside relative to
// ws. A file "inside" is written last. The test makes ws/hostlink ->
// outside before the run.
func Writes(ws, outside, etc, rel string) string {
	return fmt.Sprintf(`import os
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
          "/proc/self/root" + ETC, "/tmp/senclaw-escape-" + os.path.basename(W), "/dev/shm/senclaw-escape-" + os.path.basename(W)]:
    attempt(p)
for p in [W + "/ro/file", W + "/hardlink", W + "/hostlink/file"]:
    attempt(p, "a")
attempt(W + "/inside")
`, ws, outside, etc, rel)
}

// CheckWrites looks at the host after Writes ran: the workspace was
// writable, and nothing outside changed (outside holds only "file", with
// its "original" content).
func CheckWrites(t *testing.T, stdout, ws, outside, etc string) {
	t.Helper()
	if !strings.Contains(stdout, "wrote "+ws+"/inside") {
		t.Errorf("could not write inside the workspace:\n%s", stdout)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("files appeared outside: %v\n%s", entries, stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "file")); string(b) != "original" {
		t.Errorf("outside file changed to %q\n%s", b, stdout)
	}
	base := filepath.Base(ws)
	for _, p := range []string{etc, "/tmp/senclaw-escape-" + base, "/dev/shm/senclaw-escape-" + base} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("wrote %s on the host", p)
		}
	}
}

// ReadFixture makes, under root, a "secret", an "allowed" and a "public"
// folder, each with a file "data", and the "hiddenfile" public/token, all
// holding SECRET, and returns their paths by name.
func ReadFixture(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{
		"secret":     filepath.Join(root, "secret", "data"),
		"allowed":    filepath.Join(root, "allowed", "data"),
		"public":     filepath.Join(root, "public", "data"),
		"hiddenfile": filepath.Join(root, "public", "token"),
	}
	for _, f := range files {
		AddFile(t, f)
	}
	return files
}

// AddFile makes the file f, and its folder, holding SECRET.
func AddFile(t *testing.T, f string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Reads tries to read each of files and prints "name True" when it could.
func Reads(files map[string]string) string {
	var prog strings.Builder
	for name, f := range files {
		fmt.Fprintf(&prog, `
try: print(%q, open(%q).read() == "SECRET")
except OSError: print(%q, False)
`, name, f, name)
	}
	return prog.String()
}

// CheckReads compares the output of Reads with the names that must be
// readable; every other one must not be.
func CheckReads(t *testing.T, stdout string, files map[string]string, readable []string) {
	t.Helper()
	for name := range files {
		want := false
		for _, n := range readable {
			want = want || n == name
		}
		if !strings.Contains(stdout, fmt.Sprintf("%s %v", name, map[bool]string{true: "True", false: "False"}[want])) {
			t.Errorf("%s readable should be %v:\n%s", name, want, stdout)
		}
	}
}

// ForkBomb forks up to 200 sleeping children and prints "forked N".
const ForkBomb = `import os, time
n = 0
for i in range(200):
    try:
        if os.fork() == 0:
            time.sleep(5); os._exit(0)
        n += 1
    except BlockingIOError:
        break
print("forked", n)`

// CheckForkBomb checks that ForkBomb was stopped before it forked limit
// children.
func CheckForkBomb(t *testing.T, stdout, stderr string, limit int) {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(stdout, "forked %d", &n); err != nil || n >= limit {
		t.Errorf("fork bomb was not stopped: %q %s", stdout, stderr)
	}
}

// MemoryHog writes 100 chunks of 16 MiB and prints "survived".
const MemoryHog = `chunks = []
for i in range(100):
    chunks.append(b"x" * (16 << 20))
print("survived")`

// DiskFill writes 2 MiB to one file and prints "efbig" when the file
// size limit stopped it.
const DiskFill = `import errno
try:
    with open("big", "wb") as f: f.write(b"x" * (2 << 20))
    print("wrote")
except OSError as e:
    print("efbig" if e.errno == errno.EFBIG else e)`
