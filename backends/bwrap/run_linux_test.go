package bwrap

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

func TestRunBasics(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
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
					if e := r.proc.Enforcement(); e.Isolation != "bwrap" {
						t.Errorf("enforcement %+v", e)
					}
				}},
				{"env_is_exact", func(t *testing.T, d testDirs) {
					// env(1), not Python: Python adds LC_CTYPE in the C locale.
					spec := newSpec(t, u, d.ws, "sh", "-c", `env | sort; echo --; tr '\0' '\n' < /proc/1/environ | sort`)
					r := run(t, b, spec)
					// pid 1 inside is bwrap, which runs on the host with the
					// fixed helper environment, never the run's.
					init := slices.Sorted(slices.Values(backends.HelperEnv()))
					// bwrap's --chdir sets PWD for the command (and only it).
					cmdEnv := slices.Sorted(slices.Values(append(slices.Clone(spec.Env), "PWD="+d.ws)))
					got, gotInit, _ := strings.Cut(r.stdout, "--\n")
					if r.status.Code != 0 || !slices.Equal(trimLines(got), cmdEnv) || !slices.Equal(trimLines(gotInit), init) {
						t.Fatalf("env %q, /proc/1/environ %q, want %q and %q (stderr %s)", got, gotInit, cmdEnv, init, r.stderr)
					}
				}},
				{"only_std_fds", func(t *testing.T, d testDirs) {
					// With mounts, which bwrap gets as open handles: none of
					// those handles reaches the sandbox either.
					spec := newSpec(t, u, d.ws)
					spec.Mounts = []backends.Mount{{Source: d.outside, Target: "ro", ReadOnly: true}, {Source: d.outside, Target: "rw"}}
					r := py(t, b, spec, `import os
print(open("ro/file").read(), open("rw/file").read())
fds = os.listdir("/proc/self/fd")
print("\n".join(sorted(fds)))`)
					// One of the four is the directory listdir opened.
					got := trimLines(r.stdout)
					if len(got) != 6 || got[0] != "original" || got[1] != "original" || !slices.Equal(got[2:5], []string{"0", "1", "2"}) {
						t.Fatalf("mounts and open fds %q (stderr %s)", r.stdout, r.stderr)
					}
				}},
				{"files_owned_by_sandbox_user", func(t *testing.T, d testDirs) {
					r := run(t, b, newSpec(t, u, d.ws, "sh", "-c", "id -u; echo x > made"))
					fi, err := os.Stat(filepath.Join(d.ws, "made"))
					if err != nil || r.status.Code != 0 {
						t.Fatalf("no file: %v %+v", err, r)
					}
					if uid := statUID(fi); uid != u.UID() || uid == 0 {
						t.Fatalf("file owned by %d on the host, want %d", uid, u.UID())
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
