package bwrap

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// cgroupDirsGone checks that no cgroup of runID is left. They are removed
// right after Wait returns (the kernel may take a moment to release an
// empty cgroup, and the caller need not wait for it), so allow a second.
func cgroupDirsGone(t *testing.T, runID string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		left = nil
		for _, pattern := range []string{"/sys/fs/cgroup/*/senclaw/", "/sys/fs/cgroup/senclaw/", "/sys/fs/cgroup/*/senclaw/*/", "/sys/fs/cgroup/senclaw/*/"} {
			dirs, _ := filepath.Glob(pattern + runID)
			left = append(left, dirs...)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	testutil.RequireCgroups(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			cases := []struct {
				name  string
				lim   backends.Limits
				prog  string
				check func(t *testing.T, r result)
			}{
				{"fork_bomb_bounded", backends.Limits{Pids: 32}, escapetest.ForkBomb, func(t *testing.T, r result) {
					escapetest.CheckForkBomb(t, r.stdout, r.stderr, 32)
				}},
				{"memory_hog_oom", backends.Limits{MemoryMB: 64}, escapetest.MemoryHog, func(t *testing.T, r result) {
					if r.status.Code != 137 || r.status.Signal != "killed: out of memory" {
						t.Errorf("status %+v, want an OOM kill (stdout %q)", r.status, r.stdout)
					}
				}},
				{"disk_quota_efbig", backends.Limits{DiskMB: 1}, escapetest.DiskFill, func(t *testing.T, r result) {
					if strings.TrimSpace(r.stdout) != "efbig" {
						t.Errorf("got %q %s", r.stdout, r.stderr)
					}
				}},
				{"cpu_quota_reported", backends.Limits{CPUs: 0.5}, `print("ok")`, func(t *testing.T, r result) {
					if got := r.proc.Enforcement().Limits; len(got) != 2 || got[0] != "cpu 0.5: cgroup v1 cfs" && got[0] != "cpu 0.5: cgroup v2 cfs" {
						t.Errorf("limits %q", got)
					}
				}},
			}
			for _, tc := range cases {
				// A one-shot's bwrap is born in its cgroups
				// (limits.Cgroups.StartInside); a lasting sandbox's run
				// is moved there.
				for _, oneShot := range []bool{false, true} {
					name := tc.name
					if oneShot {
						name += "/one_shot"
					}
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						d := newTestDirs(t, u)
						spec := newSpec(t, u, d.ws)
						spec.Limits, spec.OneShot = tc.lim, oneShot
						r := py(t, b, spec, tc.prog)
						tc.check(t, r)
						if len(r.proc.Pids()) != 0 {
							t.Errorf("processes left: %v", r.proc.Pids())
						}
						cgroupDirsGone(t, spec.RunID)
					})
				}
			}
		})
	}
}

func TestKillTree(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	for _, noCgroups := range []bool{false, true} {
		name := map[bool]string{false: "cgroups", true: "no_cgroups"}[noCgroups]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := New(Options{})
			b.noCgroups = noCgroups
			u := sandboxUsers(t)[0]
			d := newTestDirs(t, u)
			spec := newSpec(t, u, d.ws, "sh", "-c", "sleep 1000 & sleep 1000 & sleep 1000")
			p, err := b.Start(context.Background(), spec)
			must(t, err)
			deadline := time.Now().Add(10 * time.Second)
			for len(p.Pids()) < 5 && time.Now().Before(deadline) { // bwrap x2, sh, 3 sleeps
				time.Sleep(10 * time.Millisecond)
			}
			pids := p.Pids()
			if len(pids) < 5 {
				t.Fatalf("tree not seen: %v", pids)
			}
			must(t, p.Kill())
			must(t, p.Kill()) // idempotent
			st, err := p.Wait()
			if err != nil || st.Signal != "killed" {
				t.Errorf("status %+v err %v", st, err)
			}
			if left := p.Pids(); len(left) != 0 {
				t.Errorf("pids after kill: %v", left)
			}
			for _, pid := range pids {
				if _, err := os.Stat("/proc/" + itoa(pid)); err == nil && !isZombie(pid) {
					t.Errorf("pid %d still alive", pid)
				}
			}
			must(t, p.Kill()) // after Wait
			cgroupDirsGone(t, spec.RunID)
		})
	}
}

func TestRlimitFallback(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	b.noCgroups = true
	u := sandboxUsers(t)[0]
	d := newTestDirs(t, u)
	spec := newSpec(t, u, d.ws)
	spec.Limits = backends.Limits{MemoryMB: 256, Pids: 64, CPUs: 1, DiskMB: 10}
	r := py(t, b, spec, `try:
    x = bytearray(512 << 20); print("allocated")
except MemoryError:
    print("memoryerror")`)
	if strings.TrimSpace(r.stdout) != "memoryerror" {
		t.Errorf("got %q %s", r.stdout, r.stderr)
	}
	e := r.proc.Enforcement()
	joined := strings.Join(e.Limits, "\n")
	for _, want := range []string{"memory 256 MiB: RLIMIT_DATA", "pids 64: RLIMIT_NPROC", "disk 10 MiB: RLIMIT_FSIZE"} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %q in %q", want, e.Limits)
		}
	}
	if len(e.Missing) != 1 || !strings.HasPrefix(e.Missing[0], "cpu 1.0: not enforced") {
		t.Errorf("missing %q", e.Missing)
	}
}

// TestRlimitFallbackStartsNodeAndTheForwarder: without a writable
// cgroup the memory limit is an rlimit that programs reserving much
// address space at start live with: Node (V8 reserves its code range),
// and the forwarder, a Go program, which loads the Unix socket guard of
// every networked or listening run; an allocation past the limit still
// fails. Under RLIMIT_AS node died with "Failed to reserve virtual memory
// for CodeRange" and the forwarder with "failed to reserve page summary
// memory", so the run was refused.
func TestRlimitFallbackStartsNodeAndTheForwarder(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.Need(t, "node is not installed")
	}
	fwd := netfwdtest.Path(t)
	b := New(Options{})
	b.noCgroups = true
	u := sandboxUsers(t)[0]
	for _, guarded := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "forwarder"}[guarded]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			spec := newSpec(t, u, d.ws, node, "-e", `console.log("node " + process.version);
try { Buffer.alloc(700 << 20).fill(1); console.log("allocated") } catch (e) { console.log("bounded") }`)
			spec.Limits = backends.Limits{MemoryMB: 512, Pids: 64}
			if guarded {
				// A networked run: the forwarder loads the guard and relays.
				netDir := filepath.Join(d.base, "net")
				must(t, os.Mkdir(netDir, 0o777))
				must(t, os.Chmod(netDir, 0o777))
				spec.Net = &backends.NetPlumbing{Dir: netDir, Forwarder: fwd, Loopback: []int{5432}}
				spec.UnixGuard = &backends.UnixGuard{Forwarder: fwd}
			}
			r := run(t, b, spec)
			if r.err != nil || r.status.Code != 0 || !strings.Contains(r.stdout, "node v") || !strings.Contains(r.stdout, "bounded") {
				t.Fatalf("status %+v err %v stdout %q stderr %.600s", r.status, r.err, r.stdout, r.stderr)
			}
			if joined := strings.Join(r.proc.Enforcement().Limits, "\n"); !strings.Contains(joined, "memory 512 MiB: RLIMIT_DATA") {
				t.Errorf("limits %q", r.proc.Enforcement().Limits)
			}
		})
	}
}

func TestStartRefusals(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	d := newTestDirs(t, u)
	// swapped was base/shared/proj when the mount was checked; shared is
	// now a symlink to a directory holding a "proj" of secrets.
	swapped := filepath.Join(d.base, "shared", "proj")
	secrets := filepath.Join(d.base, "secrets")
	must(t, os.MkdirAll(filepath.Join(secrets, "proj"), 0o755))
	must(t, os.Symlink(secrets, filepath.Join(d.base, "shared")))
	cases := []struct {
		name     string
		change   func(s *backends.Spec)
		check    func(err error) bool
		startErr bool // the error must come from Start, not Wait
	}{
		{"root_user", func(s *backends.Spec) { s.User = &backends.Credential{UID: 0, GID: 0} }, isRefused, true},
		{"nil_user_as_root", func(s *backends.Spec) { s.User = nil }, func(err error) bool { return os.Geteuid() != 0 || isRefused(err) }, true},
		{"bad_mount_source", func(s *backends.Spec) {
			s.Mounts = []backends.Mount{{Source: "/nonexistent/senclaw", Target: "m"}}
		}, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "cannot be opened")
		}, true},
		// A canonical source whose path has since gone through a symlink
		// (another sandbox that may write above it swapped a directory
		// for a link to a secret): refused, nothing bound.
		{"swapped_workspace", func(s *backends.Spec) {
			s.Workspace = swapped
		}, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "the workspace "+swapped+" now leads to")
		}, true},
		{"swapped_mount_source", func(s *backends.Spec) {
			s.Mounts = []backends.Mount{{Source: swapped, Target: "m"}}
		}, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "now leads to")
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := newSpec(t, u, d.ws, "touch", "ran")
			tc.change(spec)
			p, err := b.Start(context.Background(), spec)
			if p != nil {
				if tc.startErr && os.Geteuid() == 0 {
					t.Errorf("Start succeeded")
				}
				_, err = p.Wait()
			}
			if !tc.check(err) {
				t.Errorf("unexpected result %v", err)
			}
			if _, serr := os.Stat(filepath.Join(d.ws, "ran")); serr == nil && tc.name != "nil_user_as_root" {
				t.Errorf("the command ran")
			}
		})
	}
}

func isRefused(err error) bool {
	var re *RefusedError
	return errors.As(err, &re)
}

// TestRlimitFallbackForkBomb checks that RLIMIT_NPROC bounds a fork bomb
// when there is no cgroup. The count is per user inside the sandbox's own
// user namespace, so other sandboxes of the same host user do not eat it.
func TestRlimitFallbackForkBomb(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	b.noCgroups = true
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			spec := newSpec(t, u, d.ws)
			spec.Limits = backends.Limits{Pids: 32}
			r := py(t, b, spec, escapetest.ForkBomb)
			escapetest.CheckForkBomb(t, r.stdout, r.stderr, 32)
		})
	}
}
