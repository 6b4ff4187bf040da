package bwrap

import (
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
	"github.com/senclaw/sandbox/backends/tracer"
	"github.com/senclaw/sandbox/internal/testutil"
)

// requireStrace skips without strace, except under CI=true.
func requireStrace(t *testing.T) {
	t.Helper()
	testutil.RequireBwrap(t)
	if ok, why := tracer.Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("strace is required under CI: %s", why)
		}
		t.Skip(why)
	}
}

// events collects a traced run's events.
type events struct {
	mu  sync.Mutex
	all []backends.TraceEvent
}

func (e *events) add(ev backends.TraceEvent) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

func (e *events) find(kind, target string) []backends.TraceEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []backends.TraceEvent
	for _, ev := range e.all {
		if ev.Kind == kind && ev.Target == target {
			out = append(out, ev)
		}
	}
	return out
}

func TestTracedRunIsSeenFromOutside(t *testing.T) {
	t.Parallel()
	requireStrace(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			must(t, os.WriteFile(filepath.Join(d.ws, "in.txt"), []byte("hello"), 0o644))
			spec := newSpec(t, u, d.ws, "sh", "-c", "cat in.txt; echo x > out.txt; /bin/true; echo y > /etc/nope")
			var ev events
			spec.Trace = ev.add
			r := run(t, b, spec)
			if r.err != nil || r.status.Code == 0 || r.stdout != "hello" {
				t.Fatalf("run %+v", r)
			}
			in := ev.find(tracer.KindRead, filepath.Join(d.ws, "in.txt"))
			out := ev.find(tracer.KindWrite, filepath.Join(d.ws, "out.txt"))
			spawn := ev.find(tracer.KindSpawn, "/bin/true")
			denied := ev.find(tracer.KindDenied, "/etc/nope")
			if len(in) != 1 || len(out) != 1 || len(spawn) != 1 || len(denied) != 1 {
				t.Fatalf("events: read %v write %v spawn %v denied %v; all %+v", in, out, spawn, denied, ev.all)
			}
			if in[0].Pid == spawn[0].Pid || out[0].Pid == 0 {
				t.Fatalf("pids: cat %d, true %d, shell %d", in[0].Pid, spawn[0].Pid, out[0].Pid)
			}
			for _, e := range ev.all {
				// bwrap's own setup (its mkdirs under /newroot) is noise.
				if strings.Contains(e.Target, "newroot") || e.Target == "/usr/bin/bwrap" {
					t.Fatalf("bwrap's setup leaked into the trace: %+v", e)
				}
			}
			if slices.Contains(r.proc.Enforcement().Missing, tracer.NoOutsideTracer) {
				t.Fatalf("traced run says it is untraced: %+v", r.proc.Enforcement())
			}
		})
	}
}

func TestTracingDoesNotChangeTheResult(t *testing.T) {
	t.Parallel()
	requireStrace(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	prog := `import subprocess, sys
print(subprocess.run(["/bin/echo", "child"], capture_output=True, text=True).stdout.strip())
print("err", file=sys.stderr)
sys.exit(3)`
	d := newTestDirs(t, u)
	plain := py(t, b, newSpec(t, u, d.ws), prog)
	spec := newSpec(t, u, d.ws)
	spec.Trace = func(backends.TraceEvent) {}
	traced := py(t, b, spec, prog)
	if plain.stdout != traced.stdout || plain.stderr != traced.stderr || plain.status != traced.status || plain.status.Code != 3 {
		t.Fatalf("untraced %+v\ntraced %+v", plain, traced)
	}
}

func TestKillingATracedRunLeavesNothing(t *testing.T) {
	t.Parallel()
	requireStrace(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	d := newTestDirs(t, u)
	marker := "senclaw-trace-kill-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	spec := newSpec(t, u, d.ws, "sh", "-c", "sleep 300 & sleep 300; : "+marker)
	spec.Limits = backends.Limits{Pids: 64}
	spec.Trace = func(backends.TraceEvent) {}
	p, err := b.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	straced := p.Pid()
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(straced) + "/comm"); strings.TrimSpace(string(comm)) != "strace" {
		t.Fatalf("the started process is %q, want strace", comm)
	}
	// The run's limits hold bwrap's tree, never its tracer.
	if slices.Contains(p.Pids(), straced) {
		t.Fatalf("strace (pid %d) is inside the run's cgroup: %v", straced, p.Pids())
	}
	time.Sleep(200 * time.Millisecond)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return after Kill")
	}
	out, _ := exec.Command("pgrep", "-f", marker).Output()
	if len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("processes left after Kill: %s", out)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(straced)); err == nil {
		t.Fatalf("strace (pid %d) is still there", straced)
	}
}

func TestIoUringFailsInATracedRun(t *testing.T) {
	t.Parallel()
	requireStrace(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	d := newTestDirs(t, u)
	spec := newSpec(t, u, d.ws)
	var ev events
	spec.Trace = ev.add
	// io_uring_setup(8, params): its submissions would bypass ptrace.
	r := py(t, b, spec, pyPrelude+`
params = ctypes.create_string_buffer(120)
print(sc(425, 8, ctypes.addressof(params)))`)
	if r.status.Code != 0 || strings.TrimSpace(r.stdout) == "0" || strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("io_uring_setup in a traced run: %+v", r)
	}
	t.Logf("io_uring_setup failed with errno %s; trace shows %d io_uring events", strings.TrimSpace(r.stdout), len(ev.find(tracer.KindDenied, "io_uring_setup")))
}
