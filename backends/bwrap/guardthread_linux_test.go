package bwrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/backends/unixguard"
	"github.com/senclaw/sandbox/internal/testutil"
)

// guardProbe connects to argv[1] (in a mount of its own in the workspace)
// and argv[2] (in the workspace), then says whether any process of the
// sandbox is the forwarder (pid 1's command line is bwrap's, which names
// what it runs) and how many seccomp filters it runs under.
const guardProbe = `
import errno, os, socket, sys
def dial(p):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
print("outside", dial(sys.argv[1]))
print("inside", dial(sys.argv[2]))
name = b"senclaw-" + b"netfwd"
fwd = os.path.exists("/run/" + name.decode())
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            fwd = fwd or name in open("/proc/%s/cmdline" % d, "rb").read()
        except OSError:
            pass
print("forwarder", fwd)
for l in open("/proc/self/status"):
    if l.startswith("Seccomp_filters:"):
        print("filters", l.split()[1])
`

// listenUnix serves a Unix socket at path that anyone may connect to.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	must(t, err)
	t.Cleanup(func() { l.Close() })
	must(t, os.Chmod(path, 0o777))
	go acceptAll(l)
}

// TestAGuardWithoutForwarderHoldsAndLeavesTheEngineAlone: a network-off
// run with the Unix socket guard runs no forwarder (the engine loads the
// guard on a thread of its own that starts bwrap), the guard still refuses
// a socket outside the sandbox's places (EACCES) and lets one in the
// workspace through, for one-shot and persistent sandboxes, behind the
// idmap launcher and for every sandbox user; and afterwards no thread of the engine is under a seccomp
// filter and the engine reaches the socket the sandbox could not. Not
// parallel: the threads of other tests' runs would be counted.
func TestAGuardWithoutForwarderHoldsAndLeavesTheEngineAlone(t *testing.T) {
	testutil.RequireBwrap(t)
	fwd := netfwdtest.Path(t)
	type mode struct {
		name              string
		oneShot, launcher bool
	}
	modes := []mode{{name: "one-shot", oneShot: true}, {name: "persistent"}}
	if os.Geteuid() == 0 {
		// bwrap behind the idmap launcher, which runs under the filter too.
		modes = append(modes, mode{name: "idmapped", oneShot: true, launcher: true})
	}
	// Outside every workspace, for the engine itself.
	engineSock := filepath.Join(t.TempDir(), "engine.sock")
	listenUnix(t, engineSock)
	for _, u := range sandboxUsers(t) {
		for _, m := range modes {
			t.Run(u.Name+"/"+m.name, func(t *testing.T) {
				d := newTestDirs(t, u)
				listenUnix(t, filepath.Join(d.outside, "host.sock"))
				inside := filepath.Join(d.ws, "in.sock")
				listenUnix(t, inside)
				must(t, os.Mkdir(filepath.Join(d.ws, "data"), 0o755))
				b := New(Options{})
				spec := newSpec(t, u, d.ws)
				spec.Mounts = []backends.Mount{{Source: d.outside, Target: "data", ReadOnly: true}}
				if m.launcher {
					b = New(Options{Launcher: testutil.Launcher(t), IDMapDir: filepath.Join(d.base, "idmap")})
					spec.Mounts = []backends.Mount{{Source: d.outside, Target: "data", IDMap: true}}
				}
				spec.UnixGuard = &backends.UnixGuard{Forwarder: fwd}
				spec.OneShot = m.oneShot
				spec.Limits = backends.Limits{Pids: 64}
				spec.Argv = []string{python, "-c", guardProbe, filepath.Join(d.ws, "data", "host.sock"), inside}
				r := run(t, b, spec)
				if r.err != nil || r.status.Code != 0 {
					t.Fatalf("run: %v %+v\nstderr: %s", r.err, r.status, r.stderr)
				}
				got := map[string]string{}
				s := bufio.NewScanner(strings.NewReader(r.stdout))
				for s.Scan() {
					k, v, _ := strings.Cut(s.Text(), " ")
					got[k] = v
				}
				want := map[string]string{"outside": "EACCES", "inside": "ok", "forwarder": "False"}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s: %q, want %q (output %q)", k, got[k], v, r.stdout)
					}
				}
				// bwrap's own filter and the guard's.
				if got["filters"] < "2" {
					t.Errorf("the command runs under %s seccomp filters, want the guard's too", got["filters"])
				}
				if !strings.Contains(strings.Join(r.proc.Enforcement().Limits, "\n"), unixGuarded) {
					t.Errorf("the run's enforcement does not name the guard: %q", r.proc.Enforcement().Limits)
				}
			})
		}
	}
	// While a run goes on, the one thread that started its bwrap has the
	// guard's filter (and no other does); it ends once bwrap has.
	spec := guardedSpec(t, sandboxUsers(t)[0], fwd, "sleep", "60")
	p, err := New(Options{}).Start(context.Background(), spec)
	must(t, err)
	if during := filteredThreads(t); len(during) != 2 { // Seccomp and Seccomp_filters
		t.Errorf("engine threads under a seccomp filter while a run goes on: %q, want the one that started it", during)
	}
	must(t, p.Kill())
	_, _ = p.Wait()
	// The threads that started bwrap end once it has.
	var filtered []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		filtered = filteredThreads(t)
		if len(filtered) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(filtered) > 0 {
		t.Errorf("engine threads under a seccomp filter after the runs: %q", filtered)
	}
	c, err := net.Dial("unix", engineSock)
	if err != nil {
		t.Fatalf("the engine cannot reach a socket outside every workspace: %v", err)
	}
	c.Close()
}

// guardedSpec is a run of argv with the Unix socket guard, network off,
// in a workspace of its own.
func guardedSpec(t *testing.T, u sandboxUser, fwd string, argv ...string) *backends.Spec {
	spec := newSpec(t, u, newTestDirs(t, u).ws, argv...)
	spec.UnixGuard = &backends.UnixGuard{Forwarder: fwd}
	return spec
}

// filteredThreads lists the threads of this process under seccomp.
func filteredThreads(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	must(t, err)
	var out []string
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // ended meanwhile
		}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, ":")
			if (k == "Seccomp" || k == "Seccomp_filters") && strings.TrimSpace(v) != "0" {
				out = append(out, task.Name()+" "+k+":"+strings.TrimSpace(v))
			}
		}
	}
	return out
}

// TestAGuardThatCannotBeLoadedStartsNothing: when the thread cannot load
// the guard's filter (here: the guard holds a listener already), the run
// is refused with the reason and nothing is started.
func TestAGuardThatCannotBeLoadedStartsNothing(t *testing.T) {
	t.Parallel()
	g, err := unixguard.NewDirect(unixguard.Policy{Workspace: t.TempDir(), User: &backends.Credential{UID: 65534, GID: 65534}})
	must(t, err)
	defer g.Close()
	first := newGuardThread()
	if first == nil {
		t.Fatal("no thread for the guard")
	}
	loaded := make(chan error, 1)
	first.start(func() { loaded <- g.Load() })
	must(t, <-loaded)
	d := &directGuard{Direct: g, thread: newGuardThread()}
	if d.thread == nil {
		t.Fatal("no thread for the guard")
	}
	defer d.Close()
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command("/bin/sh", "-c", "touch "+marker)
	d.prepare(func() (*limits.Plan, error) { return &limits.Plan{}, nil })
	_, err = d.fork(cmd)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "Unix socket guard could not be set up") {
		t.Fatalf("fork: %v, want the run refused for the guard", err)
	}
	if cmd.Process != nil {
		_ = cmd.Wait()
		t.Fatal("the command was started")
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
}

// TestAGuardThreadEndsWithoutKillingOthersRuns: the thread that started a
// guarded bwrap ends with it, and a thread's children get their
// parent-death signal when it ends, whichever goroutine forked them: no
// other run's process (forked from a thread that one of them could have
// been) is killed by the end of many guarded runs.
func TestAGuardThreadEndsWithoutKillingOthersRuns(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	fwd := netfwdtest.Path(t)
	u := sandboxUsers(t)[0]
	b := New(Options{})
	var long []backends.Process
	ended := make(chan string, 8)
	for i := 0; i < 8; i++ {
		// Forked from whatever threads the goroutines are on.
		d := newTestDirs(t, u)
		ch := make(chan backends.Process, 1)
		go func() {
			p, err := b.Start(context.Background(), newSpec(t, u, d.ws, "sleep", "60"))
			if err != nil {
				t.Error(err)
			}
			ch <- p
		}()
		if p := <-ch; p != nil {
			long = append(long, p)
			defer p.Kill()
			go func() {
				st, err := p.Wait()
				ended <- fmt.Sprintf("long run %d ended: %+v %v", i, st, err)
			}()
		}
	}
	for i := 0; i < 40; i++ {
		p, err := b.Start(context.Background(), guardedSpec(t, u, fwd, "true"))
		must(t, err)
		_, _ = p.Wait()
	}
	time.Sleep(200 * time.Millisecond) // the last threads end
	select {
	case e := <-ended:
		t.Error(e)
	default:
	}
	for _, p := range long {
		_ = p.Kill()
	}
}

// TestAQuickGuardedRunIsNotRefused: a command that is over before the
// engine looks at its sandbox (its mounts go with it) leaves nothing to
// guard, and its run is not refused; many at a time, for the race.
func TestAQuickGuardedRunIsNotRefused(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	fwd := netfwdtest.Path(t)
	u := sandboxUsers(t)[0]
	b := New(Options{})
	const workers, runs = 4, 25
	errs := make(chan error, workers*runs)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < runs; i++ {
				spec := guardedSpec(t, u, fwd, "true")
				spec.OneShot = true
				p, err := b.Start(context.Background(), spec)
				if err != nil {
					errs <- err
					continue
				}
				if st, err := p.Wait(); err != nil || st.Code != 0 {
					errs <- fmt.Errorf("run: %v %+v", err, st)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestAGuardedRunIsBornInItsCgroups: the thread that forks a guarded
// bwrap joins the run's cgroups while the command is made (prepare), so
// bwrap is born in every one of them, and it is out of them again once
// Start has returned; for one-shot and persistent sandboxes' runs.
func TestAGuardedRunIsBornInItsCgroups(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	testutil.RequireCgroups(t)
	fwd := netfwdtest.Path(t)
	u := sandboxUsers(t)[0]
	b := New(Options{})
	for _, oneShot := range []bool{true, false} {
		t.Run(map[bool]string{true: "one_shot", false: "persistent"}[oneShot], func(t *testing.T) {
			t.Parallel()
			spec := guardedSpec(t, u, fwd, "sleep", "30")
			spec.OneShot, spec.Limits = oneShot, backends.Limits{Pids: 16}
			if !oneShot {
				spec.SandboxID = "guarded-" + limits.RandomID()
			}
			p, err := b.Start(context.Background(), spec)
			must(t, err)
			defer func() { p.Kill(); p.Wait() }()
			var dirs []string
			for _, pattern := range []string{"/sys/fs/cgroup/*/senclaw/", "/sys/fs/cgroup/*/senclaw/*/"} {
				d, _ := filepath.Glob(pattern + spec.RunID)
				dirs = append(dirs, d...)
			}
			if len(dirs) == 0 {
				t.Fatalf("no cgroup of run %s", spec.RunID)
			}
			bwrapPid := strconv.Itoa(p.Pid())
			self := strconv.Itoa(os.Getpid())
			for _, d := range dirs {
				procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
				must(t, err)
				if !slices.Contains(strings.Fields(string(procs)), bwrapPid) {
					t.Errorf("bwrap (%s) is not in %s: %q", bwrapPid, d, procs)
				}
				if slices.Contains(strings.Fields(string(procs)), self) {
					t.Errorf("a thread of the engine (%s) is still in %s after Start", self, d)
				}
			}
		})
	}
}
