package landlock

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/escapetest"
)

// TestEscapeSyscalls checks that seccomp and Landlock hold inside a real
// sandbox: the same calls the bwrap backend refuses, and the host's pid 1,
// which this sandbox sees but may not signal.
func TestEscapeSyscalls(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	want := escapetest.SyscallsWant()
	want["signal_pid1"] = "1" // the host's init: out of the sandbox's scope
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			r := py(t, b, newSpec(t, u, d.ws), escapetest.Syscalls)
			if r.status.Code != 0 {
				t.Fatalf("exit %+v: %s", r.status, r.stderr)
			}
			escapetest.CheckSyscalls(t, r.stdout, want)
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
			t.Run(u.Name+"_"+string(mode), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				must(t, os.Symlink(d.outside, filepath.Join(d.ws, "hostlink")))
				rel, err := filepath.Rel(d.ws, d.outside)
				must(t, err)
				etc := fmt.Sprintf("/etc/senclaw-landlock-escape-%s-%s", u.Name, mode)
				spec := newSpec(t, u, d.ws)
				spec.FsMode = mode
				spec.Mounts = []backends.Mount{{Source: d.outside, Target: "ro", ReadOnly: true}}
				r := py(t, b, spec, escapetest.Writes(d.ws, d.outside, etc, rel))
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				escapetest.CheckWrites(t, r.stdout, d.ws, d.outside, etc)
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
			t.Run(u.Name+"_"+tc.name, func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				root := filepath.Dir(d.outside)
				files := escapetest.ReadFixture(t, root)
				spec := newSpec(t, u, d.ws)
				spec.FsMode = tc.mode
				spec.ReadPaths = []string{filepath.Dir(files["allowed"])}
				if tc.hide {
					spec.Hidden = []string{filepath.Dir(files["secret"]), files["hiddenfile"]}
				}
				// Made after the backend and the spec: a sibling of the
				// hidden folder that did not exist when either was made.
				files["newsibling"] = filepath.Join(root, "newsibling", "data")
				escapetest.AddFile(t, files["newsibling"])
				r := py(t, b, spec, escapetest.Reads(files))
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				escapetest.CheckReads(t, r.stdout, files, tc.readable)
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
			t.Run(u.Name+"_"+string(mode), func(t *testing.T) {
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
