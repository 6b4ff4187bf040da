package bwrap

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// The run's environment reaches only the sandboxed command: bwrap (and,
// traced, strace and setpriv) run on the host, outside every namespace,
// with a fixed environment, so a library the sandbox planted and named in
// LD_PRELOAD or LD_LIBRARY_PATH never loads there.
func TestHostSideProgramsIgnoreTheRunsEnvironment(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	eachLaunch(t, func(t *testing.T, u sandboxUser, traced bool) {
		spec := func(t *testing.T, d testDirs, env []string, argv ...string) *backends.Spec {
			s := newSpec(t, u, d.ws, argv...)
			s.Env = append(s.Env, env...)
			if traced {
				s.Trace = func(backends.TraceEvent) {}
			}
			return s
		}
		t.Run("preload_missing", func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			r := run(t, b, spec(t, d, []string{"LD_PRELOAD=/nonexistent.so"}, "true"))
			// The command's own ld.so says it once, inside; a host-side
			// program that got the variable would say it too.
			if n := strings.Count(r.stderr, "/nonexistent.so"); r.status.Code != 0 || n != 1 {
				t.Fatalf("ld.so complained %d times (want once, by the command): %q %+v", n, r.stderr, r.status)
			}
		})
		t.Run("preload_planted", func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			lib := testutil.PlantLibrary(t, d.ws, "plant.so")
			r := run(t, b, spec(t, d, []string{"LD_PRELOAD=" + lib.Path}, "sh", "-c", "true"))
			if host := lib.OnHost(t); len(host) > 0 || r.status.Code != 0 {
				t.Fatalf("the planted library ran on the host: %q (status %+v, stderr %q)", host, r.status, r.stderr)
			}
			if len(lib.Loads(t)) == 0 {
				t.Fatal("the planted library did not even load in the sandbox: the run's LD_PRELOAD did not reach the command")
			}
		})
		t.Run("library_path_planted", func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			dir := filepath.Join(d.ws, "lib")
			must(t, os.Mkdir(dir, 0o777))
			must(t, os.Chmod(dir, 0o777))
			// The libraries bwrap and setpriv need, by their sonames.
			bwrapLib := testutil.PlantLibrary(t, dir, "libcap.so.2", "cap_from_name")
			setprivLib := testutil.PlantLibrary(t, dir, "libcap-ng.so.0",
				"capng_name_to_capability", "capng_capability_to_name", "capng_update", "capng_apply", "capng_have_capability")
			r := run(t, b, spec(t, d, []string{"LD_LIBRARY_PATH=" + dir}, "sh", "-c", `echo "$LD_LIBRARY_PATH"`))
			if host := append(bwrapLib.OnHost(t), setprivLib.OnHost(t)...); len(host) > 0 {
				t.Fatalf("a planted library ran on the host: %q (stderr %q)", host, r.stderr)
			}
			if strings.TrimSpace(r.stdout) != dir {
				t.Fatalf("LD_LIBRARY_PATH did not reach the command: %q %q", r.stdout, r.stderr)
			}
		})
	})
}

// bwrap's options, with the host paths of the workspace, the mounts, the
// masks and the run's environment, reach it through a descriptor: pid 1
// inside and ps on the host see only "bwrap --args N --" and the command.
func TestBwrapsCommandLineHoldsOnlyTheCommand(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	eachLaunch(t, func(t *testing.T, u sandboxUser, traced bool) {
		d := newTestDirs(t, u)
		hidden := filepath.Join(d.base, "engine-data")
		must(t, os.Mkdir(hidden, 0o755))
		spec := newSpec(t, u, d.ws, "sh", "-c", `tr '\0' ' ' < /proc/1/cmdline; echo; read x`)
		spec.FsMode = backends.FsOpen
		spec.Hidden = []string{hidden}
		spec.Mounts = []backends.Mount{{Source: d.outside, Target: "data", ReadOnly: true}}
		spec.Env = append(spec.Env, "API_KEY=sk-secret-value-42")
		if traced {
			spec.Trace = func(backends.TraceEvent) {}
		}
		pr, pw, err := os.Pipe()
		must(t, err)
		defer pw.Close()
		spec.Stdin = pr
		var out lockedBuffer
		spec.Stdout, spec.Stderr = &out, &out
		p, err := b.Start(t.Context(), spec)
		pr.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		// What the host shows of every process the run started.
		var host []string
		for _, pid := range append([]int{p.Pid()}, p.Pids()...) {
			if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
				host = append(host, strings.ReplaceAll(string(cmdline), "\x00", " "))
			}
		}
		pw.Close()
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		inside := out.String()
		if !strings.Contains(inside, "--args") {
			t.Fatalf("pid 1's command line is not bwrap's: %q", inside)
		}
		for _, leak := range []string{d.ws, d.base, d.outside, hidden, "sk-secret-value-42", "--setenv", "--bind"} {
			if strings.Contains(inside, leak) {
				t.Errorf("/proc/1/cmdline inside shows %q: %q", leak, inside)
			}
			for _, h := range host {
				if strings.Contains(h, leak) {
					t.Errorf("a host process's command line shows %q: %q", leak, h)
				}
			}
		}
	})
}

// eachLaunch runs fn, in parallel, for each sandbox user, untraced and
// traced (strace and setpriv in front of bwrap).
func eachLaunch(t *testing.T, fn func(t *testing.T, u sandboxUser, traced bool)) {
	for _, u := range sandboxUsers(t) {
		for _, traced := range []bool{false, true} {
			name := u.Name
			if traced {
				name += "_traced"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if traced {
					requireStrace(t)
				}
				fn(t, u, traced)
			})
		}
	}
}

// lockedBuffer is a bytes.Buffer that a backend may write while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
