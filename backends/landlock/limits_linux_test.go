package landlock

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

func TestLimits(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
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
					if got := strings.Join(r.proc.Enforcement().Limits, "\n"); !strings.Contains(got, "cpu 0.5: cgroup v") {
						t.Errorf("limits %q", got)
					}
				}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					d := newTestDirs(t, u)
					spec := newSpec(t, u, d.ws)
					spec.Limits = tc.lim
					r := py(t, b, spec, tc.prog)
					tc.check(t, r)
					if len(r.proc.Pids()) != 0 {
						t.Errorf("processes left: %v", r.proc.Pids())
					}
				})
			}
		})
	}
}

// TestSandboxLimitsHoldAcrossRuns: the limits of a sandbox bound the sum
// of its concurrent runs, under Landlock as under bwrap.
func TestSandboxLimitsHoldAcrossRuns(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	testutil.RequireCgroups(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	escapetest.HoldAcrossRuns(t, func(ctx context.Context, argv []string, edit func(*backends.Spec)) (backends.Process, error) {
		spec := newSpec(t, u, newTestDirs(t, u).ws, argv...)
		edit(spec)
		return b.Start(ctx, spec)
	})
}

// TestKillTree: Kill ends every process of the run, those that left its
// session and process group included.
func TestKillTree(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	for _, noCgroups := range []bool{false, true} {
		t.Run(map[bool]string{false: "cgroups", true: "no_cgroups"}[noCgroups], func(t *testing.T) {
			t.Parallel()
			if !noCgroups {
				testutil.RequireCgroups(t)
			}
			b := New(Options{})
			b.noCgroups = noCgroups
			u := sandboxUsers(t)[0]
			d := newTestDirs(t, u)
			spec := newSpec(t, u, d.ws, "sh", "-c", "setsid sleep 1000 & sleep 1000 & sleep 1000")
			p, err := b.Start(context.Background(), spec)
			must(t, err)
			deadline := time.Now().Add(10 * time.Second)
			for len(p.Pids()) < 4 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			pids := p.Pids()
			if len(pids) < 4 {
				t.Fatalf("tree not seen: %v", pids)
			}
			must(t, p.Kill())
			must(t, p.Kill())
			st, err := p.Wait()
			if err != nil || st.Signal != "killed" {
				t.Errorf("status %+v err %v", st, err)
			}
			for _, pid := range pids {
				if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
					t.Errorf("pid %d still alive: %s", pid, b)
				}
			}
			must(t, p.Kill())
		})
	}
}

// TestTraceFromOutside: strace follows a Landlock run from outside: the
// command's own exec and its file access are seen, the helper's are not.
func TestTraceFromOutside(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	if ok, why := tracer.Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("strace is required under CI: %s", why)
		}
		t.Skip(why)
	}
	b := New(Options{})
	u := sandboxUsers(t)[0]
	d := newTestDirs(t, u)
	var mu sync.Mutex
	var events []backends.TraceEvent
	spec := newSpec(t, u, d.ws, "sh", "-c", "cat /etc/hostname > copied; cat /etc/shadow 2>/dev/null; true")
	spec.Trace = func(ev backends.TraceEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}
	r := run(t, b, spec)
	if r.status.Code != 0 {
		t.Fatalf("exit %+v: %s", r.status, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	var seen []string
	for _, ev := range events {
		seen = append(seen, ev.Kind+" "+ev.Target)
		if ev.Source != tracer.SourceStrace {
			t.Errorf("event from %q: %+v", ev.Source, ev)
		}
	}
	all := strings.Join(seen, "\n")
	for _, want := range []string{"file.read /etc/hostname", "file.write " + d.ws + "/copied"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in the trace:\n%s", want, all)
		}
	}
	if strings.Contains(all, HelperCommand) || strings.Contains(all, "/proc/self/fd/") {
		t.Errorf("the helper's own work is in the trace:\n%s", all)
	}
}

// TestRlimitFallbackForkBomb: without a cgroup, RLIMIT_NPROC still bounds
// a fork bomb, and counts on top of what the sandbox user already runs,
// so a user with many processes of their own can still start a run.
func TestRlimitFallbackForkBomb(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	b.noCgroups = true
	u := sandboxUsers(t)[0]
	if u.Cred != nil {
		// A user of its own: the count is per user on the whole machine,
		// and other tests run as the usual sandbox users at the same time.
		u = sandboxUser{Name: "own_user", Cred: &backends.Credential{UID: 64123, GID: 64123}}
	}
	d := newTestDirs(t, u)
	spec := newSpec(t, u, d.ws)
	// The sandbox user already runs more processes than the limit.
	for i := 0; i < 20; i++ {
		argv := []string{"sleep", "30"}
		if u.Cred != nil {
			argv = append([]string{"setpriv", fmt.Sprintf("--reuid=%d", u.Cred.UID), fmt.Sprintf("--regid=%d", u.Cred.GID), "--clear-groups"}, argv...)
		}
		other := exec.Command(argv[0], argv[1:]...)
		must(t, other.Start())
		t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	}
	spec.Limits = backends.Limits{Pids: 16}
	r := py(t, b, spec, escapetest.ForkBomb)
	escapetest.CheckForkBomb(t, r.stdout, r.stderr, 16)
	if !strings.HasPrefix(r.stdout, "forked ") || strings.HasPrefix(r.stdout, "forked 0") {
		t.Errorf("the run could not fork at all: %q %s", r.stdout, r.stderr)
	}
	if !strings.Contains(strings.Join(r.proc.Enforcement().Missing, "\n"), "RLIMIT_NPROC counts every process") {
		t.Errorf("missing %q", r.proc.Enforcement().Missing)
	}
}

// TestLimitsWithoutCgroups: without a writable cgroup (a desktop whose
// user has none delegated) the limits are rlimits, and the helper stays
// as the run's parent. The memory limit is RLIMIT_DATA, each process's
// own: the helper (a Go program, which reserves far more address space
// than it uses) carries it as well as the command, Node starts under it
// (under RLIMIT_AS V8 could not reserve its code range), and a program
// that outgrows it fails its allocation.
func TestLimitsWithoutCgroups(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	b.noCgroups = true
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			spec := newSpec(t, u, d.ws)
			spec.Limits = backends.Limits{MemoryMB: 256, Pids: 64}
			r := py(t, b, spec, `
import os, subprocess
def data(pid):
    for line in open("/proc/%s/limits" % pid):
        if line.startswith("Max data size"):
            return line.split()[3]
print("started")
print("command", data("self"))
print("helper", data(os.getppid()))
print(subprocess.run(["node", "-e", "console.log('node ran')"], capture_output=True, text=True).stdout.strip())
try:
    x = bytearray(400 << 20)
    print("allocated past the limit")
except MemoryError:
    print("bounded")`)
			if r.status.Code != 0 || !strings.Contains(r.stdout, "started") || !strings.Contains(r.stdout, "bounded") {
				t.Fatalf("status %+v stdout %q stderr %.600s", r.status, r.stdout, r.stderr)
			}
			if want := strconv.Itoa(256 << 20); !strings.Contains(r.stdout, "command "+want) || !strings.Contains(r.stdout, "helper "+want) {
				t.Errorf("the data limit is not on the command and the helper: %q", r.stdout)
			}
			if !strings.Contains(r.stdout, "node ran") {
				t.Errorf("node did not start under the limit: %q %.600s", r.stdout, r.stderr)
			}
			if !strings.Contains(strings.Join(r.proc.Enforcement().Limits, "\n"), "RLIMIT_DATA") {
				t.Errorf("limits %q", r.proc.Enforcement().Limits)
			}
		})
	}
}
