package landlock

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

func TestRunBasics(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			cases := []struct {
				name  string
				check func(t *testing.T, d testDirs)
			}{
				{"output_and_exit_code", func(t *testing.T, d testDirs) {
					r := run(t, b, newSpec(t, u, d.ws, "sh", "-c", "echo out; echo err >&2; exit 7"))
					if r.err != nil || r.status.Code != 7 || r.stdout != "out\n" || r.stderr != "err\n" {
						t.Fatalf("got %+v", r)
					}
					if e := r.proc.Enforcement(); e.Isolation != "landlock" {
						t.Errorf("enforcement %+v", e)
					}
				}},
				{"env_is_exact", func(t *testing.T, d testDirs) {
					spec := newSpec(t, u, d.ws, "sh", "-c", `env | sort`)
					r := run(t, b, spec)
					want := slices.Sorted(slices.Values(append(privateTmp(spec.Env, d.ws), "PWD="+d.ws)))
					if r.status.Code != 0 || !slices.Equal(trimLines(r.stdout), want) {
						t.Fatalf("env %q, want %q (stderr %s)", r.stdout, want, r.stderr)
					}
				}},
				{"private_tmpdir", func(t *testing.T, d testDirs) {
					r := run(t, b, newSpec(t, u, d.ws, "sh", "-c", `echo x > "$TMPDIR/f" && cat "$TMPDIR/f"; echo y > /tmp/senclaw-landlock-escape && echo wrote-tmp`))
					if strings.TrimSpace(r.stdout) != "x" {
						t.Fatalf("TMPDIR: %q %s", r.stdout, r.stderr)
					}
					if _, err := os.Stat(filepath.Join(d.ws, ".tmp", "f")); err != nil {
						t.Errorf("TMPDIR is not in the workspace: %v", err)
					}
				}},
				{"only_std_fds", func(t *testing.T, d testDirs) {
					spec := newSpec(t, u, d.ws)
					spec.Mounts = []backends.Mount{{Source: d.outside, Target: "ro", ReadOnly: true}, {Source: d.outside, Target: "sub/rw"}}
					r := py(t, b, spec, `import os
print(open("ro/file").read(), open("sub/rw/file").read())
fds = os.listdir("/proc/self/fd")
print("\n".join(sorted(fds)))`)
					got := trimLines(r.stdout)
					if len(got) != 6 || got[0] != "original" || got[1] != "original" || !slices.Equal(got[2:5], []string{"0", "1", "2"}) {
						t.Fatalf("mounts and open fds %q (stderr %s)", r.stdout, r.stderr)
					}
				}},
				{"files_owned_by_sandbox_user", func(t *testing.T, d testDirs) {
					r := run(t, b, newSpec(t, u, d.ws, "sh", "-c", "echo x > made; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Groups):' /proc/self/status"))
					fi, err := os.Stat(filepath.Join(d.ws, "made"))
					if err != nil || r.status.Code != 0 {
						t.Fatalf("no file: %v %+v", err, r)
					}
					if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid != u.UID() || uid == 0 {
						t.Fatalf("file owned by %d on the host, want %d", uid, u.UID())
					}
					st := map[string]string{}
					for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
						k, v, _ := strings.Cut(line, ":")
						st[k] = strings.TrimSpace(v)
					}
					for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
						if st[k] != "0000000000000000" {
							t.Errorf("%s = %s, want no capabilities", k, st[k])
						}
					}
					if os.Geteuid() == 0 && st["CapBnd"] != "0000000000000000" {
						t.Errorf("CapBnd = %s, want an empty bounding set", st["CapBnd"])
					}
					if st["NoNewPrivs"] != "1" || st["Seccomp"] != "2" || (os.Geteuid() == 0 && st["Groups"] != "") {
						t.Errorf("status %v", st)
					}
				}},
				{"own_session", func(t *testing.T, d testDirs) {
					r := py(t, b, newSpec(t, u, d.ws), `import os
print(os.getsid(0) == os.getpid(), os.getsid(0) != os.getsid(os.getppid()))`)
					if strings.TrimSpace(r.stdout) != "True True" {
						t.Fatalf("session: %q %s", r.stdout, r.stderr)
					}
				}},
				{"ld_preload_only_in_the_command", func(t *testing.T, d testDirs) {
					// The run's LD_PRELOAD reaches the command (whose loader
					// complains once), never the helper on the host side.
					spec := newSpec(t, u, d.ws, "sh", "-c", "true")
					spec.Env = append(spec.Env, "LD_PRELOAD=/nonexistent/senclaw-preload.so")
					r := run(t, b, spec)
					if n := strings.Count(r.stderr, "senclaw-preload.so"); r.status.Code != 0 || n != 1 {
						t.Fatalf("the preload was tried %d times (exit %+v): %s", n, r.status, r.stderr)
					}
				}},
				{"command_not_found", func(t *testing.T, d testDirs) {
					r := run(t, b, newSpec(t, u, d.ws, "no-such-command-senclaw"))
					if r.status.Code != 127 || !strings.Contains(r.stderr, "command not found") {
						t.Fatalf("got %+v", r)
					}
				}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.check(t, newTestDirs(t, u))
				})
			}
		})
	}
}

// TestRunEndsWithItsCommand: what the command leaves running ends with it
// (as under bwrap, whose pid namespace ends with its init), and the run's
// output is returned at once rather than when those children let go of
// its pipes.
func TestRunEndsWithItsCommand(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	for _, noCgroups := range []bool{false, true} {
		t.Run(map[bool]string{false: "cgroups", true: "no_cgroups"}[noCgroups], func(t *testing.T) {
			t.Parallel()
			b := New(Options{})
			b.noCgroups = noCgroups
			u := sandboxUsers(t)[0]
			d := newTestDirs(t, u)
			start := time.Now()
			r := run(t, b, newSpec(t, u, d.ws, "sh", "-c", "sleep 100 & setsid sleep 100 & echo $! > pid; echo done"))
			if took := time.Since(start); r.stdout != "done\n" || took > 3*time.Second {
				t.Fatalf("stdout %q after %v", r.stdout, took)
			}
			b2, _ := os.ReadFile(filepath.Join(d.ws, "pid"))
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b2))); err != nil || alive(pid) {
				t.Errorf("the setsid child %q outlived its run", b2)
			}
		})
	}
}
