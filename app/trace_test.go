package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/tracehooks"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/tracer"
)

const sysPython = "/usr/bin/python3"

// requireTracing skips without bwrap or strace, except under CI=true.
func requireTracing(t *testing.T) {
	t.Helper()
	_, err := os.Stat("/usr/bin/bwrap")
	ok, why := tracer.Available()
	if err == nil && ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("bwrap and strace are required under CI: %v %s", err, why)
	}
	t.Skipf("tracing tools missing: %v %s", err, why)
}

// traceEngine is an engine with the real bwrap backend first.
func traceEngine(t *testing.T) *Engine {
	t.Helper()
	var user *backends.Credential
	if os.Geteuid() == 0 {
		user = &backends.Credential{UID: 65534, GID: 65534}
	}
	return newTestEngine(t, []backends.Backend{bwrap.New(bwrap.Options{SandboxUser: user}), directBackend(t)})
}

// tracedSandbox creates a sandbox from cfg with tracing on.
func tracedSandbox(t *testing.T, e *Engine, cfg SandboxConfig) *Sandbox {
	t.Helper()
	sb, err := e.Create(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetTrace(sb.ID, true); err != nil {
		t.Fatal(err)
	}
	return sb
}

// putFile writes a workspace file the sandbox user can read and write.
func putFile(t *testing.T, e *Engine, sb *Sandbox, name, data string) string {
	t.Helper()
	p := filepath.Join(sb.Workspace, name)
	if err := os.WriteFile(p, []byte(data), 0o666); err != nil {
		t.Fatal(err)
	}
	e.chownToSandbox(sb, p)
	return p
}

func execOK(t *testing.T, e *Engine, id string, req RunRequest) *RunResult {
	t.Helper()
	res, err := e.Exec(context.Background(), id, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func runEvents(t *testing.T, e *Engine, runID, kind string) []StoredEvent {
	t.Helper()
	res, err := e.Events(EventQuery{RunID: runID, KindPrefix: kind, Limit: MaxEventsLimit})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(res.Events) // oldest first reads better in failures
	return res.Events
}

// acts keeps one source's events that are not fold summaries, as
// "kind target" lines.
func acts(evs []StoredEvent, source string) []string {
	var out []string
	for _, ev := range evs {
		if ev.Source == source && !strings.HasSuffix(ev.Target, "/**") {
			out = append(out, ev.Kind+" "+ev.Target)
		}
	}
	return out
}

// listener accepts loopback connections until the test ends.
func listener(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestTraceShowsWhatARunTouched(t *testing.T) {
	t.Parallel()
	requireTracing(t)
	e := traceEngine(t)
	port := listener(t)
	// The loopback rule opens this machine's port (through the proxy).
	sb := tracedSandbox(t, e, SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true), Loopback: []int{port}})
	in := putFile(t, e, sb, "in.txt", "data")
	ws := sb.Workspace
	res := execOK(t, e, sb.ID, RunRequest{Argv: []string{sysPython, "-c", fmt.Sprintf(`
import socket, subprocess
data = open("in.txt").read()
open("a.txt", "w").write(data)
open("b.txt", "w").write(data)
subprocess.run(["/bin/true"])
s = socket.socket()
s.connect(("127.0.0.1", %d))
s.close()
try:
    open("/etc/senclaw-x", "w")
except OSError as e:
    print("refused:", e.errno)
`, port)}})
	if !res.Record.OK() || !strings.Contains(res.Stdout, "refused") {
		t.Fatalf("run %+v stdout %q stderr %q", res.Record, res.Stdout, res.Stderr)
	}
	evs := runEvents(t, e, res.Record.ID, "")
	want := []string{
		"proc.spawn " + sysPython,
		"file.read " + in,
		"file.write " + filepath.Join(ws, "a.txt"),
		"file.write " + filepath.Join(ws, "b.txt"),
		"proc.spawn /bin/true",
		"denied /etc/senclaw-x",
		// The Unix socket guard answers every connect (strace no longer
		// sees it) and reports it to the trace itself.
		fmt.Sprintf("net.connect 127.0.0.1:%d", port),
	}
	if got := acts(evs, tracer.SourceStrace); !slices.Equal(got, want[:6]) {
		t.Fatalf("strace events\n got %q\nwant %q\nall %+v", got, want[:6], evs)
	}
	if got := acts(evs, tracer.SourceEngine); !slices.Equal(got, want[6:]) {
		t.Fatalf("the engine's events\n got %q\nwant %q\nall %+v", got, want[6:], evs)
	}
	pid := map[string]int{}
	for _, ev := range evs {
		if ev.Source == tracer.SourceStrace || ev.Source == tracer.SourceEngine {
			pid[ev.Kind+" "+ev.Target] = ev.Pid
		}
	}
	py := pid[want[0]]
	for _, w := range []string{want[1], want[2], want[3], want[5], want[6]} {
		if pid[w] != py {
			t.Errorf("%s came from pid %d, want python's %d", w, pid[w], py)
		}
	}
	if pid[want[4]] == py || pid[want[4]] == 0 {
		t.Errorf("/bin/true started in pid %d, python is %d", pid[want[4]], py)
	}
	var folded bool
	for _, ev := range evs {
		folded = folded || (ev.Target == "/usr/**" && strings.HasSuffix(ev.Detail, "reads folded"))
	}
	if !folded {
		t.Errorf("no folded /usr/** summary in %+v", evs)
	}
	if got := acts(evs, tracer.SourceDiff); !slices.Equal(got, []string{"file.write " + filepath.Join(ws, "a.txt"), "file.write " + filepath.Join(ws, "b.txt")}) {
		t.Errorf("diff events %q", got)
	}
}

func TestTraceLogIsOutOfTheRunsReach(t *testing.T) {
	t.Parallel()
	requireTracing(t)
	e := traceEngine(t)
	sb := tracedSandbox(t, e, SandboxConfig{Backend: ptr("bwrap")})
	// The run looks everywhere it can for the log: its own and every
	// visible process's descriptors, process names, the workspace; it
	// deletes what it may, then writes one more file.
	res := execOK(t, e, sb.ID, RunRequest{Argv: []string{sysPython, "-c", `
import os, shutil
mine = sorted(int(f) for f in os.listdir("/proc/self/fd"))
links = [os.readlink("/proc/self/fd/%d" % f) for f in mine if f > 2 and os.path.exists("/proc/self/fd/%d" % f)]
comms = sorted(open("/proc/%s/comm" % p).read().strip() for p in os.listdir("/proc") if p.isdigit())
found = [os.path.join(d, f) for d, _, fs in os.walk(".") for f in fs]
for name in os.listdir("."):
    shutil.rmtree(name, ignore_errors=True) if os.path.isdir(name) else os.remove(name)
open("after.txt", "w").write("x")
print(mine, links, comms, found)
`}})
	if !res.Record.OK() {
		t.Fatalf("run %+v stderr %q", res.Record, res.Stderr)
	}
	out := res.Stdout
	for _, bad := range []string{"strace", "pipe:", "senclaw.db", ".senclaw", ".ndjson"} {
		if strings.Contains(out, bad) {
			t.Fatalf("the run saw %q: %s", bad, out)
		}
	}
	if !strings.HasPrefix(out, "[0, 1, 2, 3]") {
		t.Fatalf("the run holds more than stdio: %s", out)
	}
	evs := runEvents(t, e, res.Record.ID, tracer.KindWrite)
	if !slices.Contains(acts(evs, tracer.SourceStrace), "file.write "+filepath.Join(sb.Workspace, "after.txt")) {
		t.Fatalf("the write after the deletion attempts is missing: %+v", evs)
	}
}

func TestTraceIsTruncatedAtTheLimit(t *testing.T) {
	t.Parallel()
	requireTracing(t)
	e := traceEngine(t)
	sb := tracedSandbox(t, e, SandboxConfig{Backend: ptr("bwrap")})
	res := execOK(t, e, sb.ID, RunRequest{Argv: []string{sysPython, "-c", `
import os
os.mkdir("many")
for i in range(6000):
    open("many/%d" % i, "w").close()
`}})
	if !res.Record.OK() {
		t.Fatalf("run %+v stderr %q", res.Record, res.Stderr)
	}
	all := runEvents(t, e, res.Record.ID, "file.")
	marks := runEvents(t, e, res.Record.ID, tracer.KindTruncated)
	if len(all) > tracer.MaxEventsPerRun || len(all) < tracer.MaxEventsPerRun-10 {
		t.Fatalf("%d file events kept, want about %d", len(all), tracer.MaxEventsPerRun)
	}
	if len(marks) != 1 || !strings.Contains(marks[0].Detail, "events dropped") {
		t.Fatalf("truncation markers %+v", marks)
	}
	var dropped int
	fmt.Sscanf(marks[0].Detail, "%d", &dropped)
	if dropped < 6000 { // 1,000+ strace writes and the diff's 6,000
		t.Fatalf("dropped %d, want at least 6000: %s", dropped, marks[0].Detail)
	}
}

func TestTracedAndUntracedRunsGiveTheSameResult(t *testing.T) {
	t.Parallel()
	requireTracing(t)
	e := traceEngine(t)
	plain, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap")})
	if err != nil {
		t.Fatal(err)
	}
	traced := tracedSandbox(t, e, SandboxConfig{Backend: ptr("bwrap")})
	req := RunRequest{Language: "python", Code: `
import subprocess, sys, os
print(subprocess.run(["/bin/echo", "child"], capture_output=True, text=True).stdout.strip())
print(sorted(os.listdir(".")), file=sys.stderr)
sys.exit(7)`}
	a, b := execOK(t, e, plain.ID, req), execOK(t, e, traced.ID, req)
	if a.Stdout != b.Stdout || a.Stderr != b.Stderr || *a.Record.ExitCode != *b.Record.ExitCode || *a.Record.ExitCode != 7 {
		t.Fatalf("untraced %q %q %d\ntraced %q %q %d", a.Stdout, a.Stderr, *a.Record.ExitCode, b.Stdout, b.Stderr, *b.Record.ExitCode)
	}
	if evs := runEvents(t, e, b.Record.ID, tracer.KindSpawn); len(evs) != 2 {
		t.Fatalf("spawn events of the traced run: %+v", evs)
	}
	if evs := runEvents(t, e, a.Record.ID, ""); len(evs) != 0 {
		t.Fatalf("the untraced run has events: %+v", evs)
	}
}

func TestIoUringFailsInATracedRun(t *testing.T) {
	t.Parallel()
	requireTracing(t)
	e := traceEngine(t)
	sb := tracedSandbox(t, e, SandboxConfig{Backend: ptr("bwrap")})
	res := execOK(t, e, sb.ID, RunRequest{Argv: []string{sysPython, "-c", `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
r = libc.syscall(425, 8, params)
print(r, ctypes.get_errno())`}})
	f := strings.Fields(res.Stdout)
	if !res.Record.OK() || len(f) != 2 || f[0] != "-1" || f[1] == "0" {
		t.Fatalf("io_uring_setup in a traced run: %q %+v", res.Stdout, res.Record)
	}
}

// noOutside is a backend that cannot trace from outside: direct, without
// the optional interface, saying so in Enforcement.Missing.
type noOutside struct{ backends.Backend }

func (noOutside) Name() string { return "blind" }

func (b noOutside) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	spec.Trace = nil // the wrapped backend must not trace either
	p, err := b.Backend.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return blindProcess{p}, nil
}

type blindProcess struct{ backends.Process }

func (p blindProcess) Enforcement() backends.Enforcement {
	enf := p.Process.Enforcement()
	enf.Missing = append(enf.Missing, tracer.NoOutsideTracer)
	return enf
}

func TestInSandboxHooksAndTheDiff(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, []backends.Backend{noOutside{direct.New()}})
	sb := tracedSandbox(t, e, SandboxConfig{Backend: ptr("blind")})
	ws := sb.Workspace
	port := listener(t)
	putFile(t, e, sb, "in.txt", "data")
	putFile(t, e, sb, "m.txt", "old")
	putFile(t, e, sb, "d.txt", "gone soon")
	past := time.Now().Add(-time.Hour)
	_ = os.Chtimes(filepath.Join(ws, "m.txt"), past, past)
	res := execOK(t, e, sb.ID, RunRequest{Argv: []string{sysPython, "-c", fmt.Sprintf(`
import os, socket, subprocess
open("in.txt").read()
open("a.txt", "w").write("new")
open("m.txt", "a").write("er")
os.remove("d.txt")
subprocess.run(["/bin/true"])
s = socket.socket(); s.connect(("127.0.0.1", %d)); s.close()
`, port)}})
	if !res.Record.OK() {
		t.Fatalf("run %+v stderr %q", res.Record, res.Stderr)
	}
	evs := runEvents(t, e, res.Record.ID, "")
	hooks := acts(evs, tracer.SourceHooks)
	for _, w := range []string{"file.read " + filepath.Join(ws, "in.txt"), "file.write " + filepath.Join(ws, "a.txt"),
		"file.write " + filepath.Join(ws, "d.txt"), "proc.spawn /bin/true", fmt.Sprintf("net.connect 127.0.0.1:%d", port)} {
		if !slices.Contains(hooks, w) {
			t.Errorf("hook events lack %q: %q", w, hooks)
		}
	}
	wantDiff := []string{"file.write " + filepath.Join(ws, "a.txt"), "file.write " + filepath.Join(ws, "m.txt"), "file.write " + filepath.Join(ws, "d.txt")}
	if got := acts(evs, tracer.SourceDiff); !slices.Equal(got, wantDiff) {
		t.Errorf("diff events %q, want %q", got, wantDiff)
	}
	if left, _ := os.ReadDir(filepath.Join(ws, ".senclaw", "trace")); len(left) != 0 {
		t.Errorf("trace files left in the workspace: %v", left)
	}
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		return
	}
	node := execOK(t, e, sb.ID, RunRequest{Language: "node", Code: fmt.Sprintf(`
import fs from "fs";
import { execFileSync } from "child_process";
import net from "net";
fs.readFileSync("in.txt");
fs.writeFileSync("n.txt", "x");
execFileSync("/bin/true");
const s = net.connect(%d, "127.0.0.1", () => s.end());
`, port)})
	if !node.Record.OK() {
		t.Fatalf("node run %+v stderr %q", node.Record, node.Stderr)
	}
	hooks = acts(runEvents(t, e, node.Record.ID, ""), tracer.SourceHooks)
	for _, w := range []string{"file.read " + filepath.Join(ws, "in.txt"), "file.write " + filepath.Join(ws, "n.txt"),
		"proc.spawn /bin/true", fmt.Sprintf("net.connect 127.0.0.1:%d", port)} {
		if !slices.Contains(hooks, w) {
			t.Errorf("node hook events lack %q: %q", w, hooks)
		}
	}
}

func TestTracedDirectRunEndsWithItsCommand(t *testing.T) {
	t.Parallel()
	if ok, why := tracer.Available(); !ok {
		t.Skip(why)
	}
	e := directEngine(t)
	sb := tracedSandbox(t, e, directConfig())
	start := time.Now()
	// Untraced, the run ends with sh (its group is killed then); the
	// tracer must not wait for the detached sleep.
	res := execOK(t, e, sb.ID, RunRequest{Command: "/bin/true; sleep 30 >/dev/null 2>&1 & echo hi > out.txt; exit 4"})
	if time.Since(start) > 10*time.Second || res.Record.ExitCode == nil || *res.Record.ExitCode != 4 {
		t.Fatalf("traced direct run took %s: %+v", time.Since(start), res.Record)
	}
	got := acts(runEvents(t, e, res.Record.ID, ""), tracer.SourceStrace)
	for _, w := range []string{"proc.spawn /bin/sh", "proc.spawn /bin/true", "file.write " + filepath.Join(sb.Workspace, "out.txt")} {
		if !slices.Contains(got, w) {
			t.Errorf("strace events lack %q: %q", w, got)
		}
	}
}

func TestEventsQueriesAndSwitches(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	sb, err := e.Create(context.Background(), directConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{-1, MaxEventsLimit + 1} {
		var fe *FieldError
		if _, err := e.Events(EventQuery{SandboxID: sb.ID, Limit: limit}); !errors.As(err, &fe) || fe.Field != "limit" {
			t.Errorf("limit %d: err %v, want a FieldError on limit", limit, err)
		}
	}
	res, err := e.Events(EventQuery{SandboxID: sb.ID})
	if err != nil || res.TraceEnabled || !strings.Contains(res.Note, "off") {
		t.Fatalf("events of an untraced sandbox: %+v %v", res, err)
	}
	note, err := e.SetTrace(sb.ID, true)
	if err != nil || !strings.Contains(note, "not security evidence") || !strings.Contains(note, "diff") {
		t.Fatalf("SetTrace note %q, %v", note, err)
	}
	if _, err := e.SetTrace("nope", true); !errors.As(err, new(*NotFoundError)) {
		t.Fatalf("SetTrace on an unknown sandbox: %v", err)
	}
	res1 := execOK(t, e, sb.ID, RunRequest{Command: "echo a > a.txt"})
	res2 := execOK(t, e, sb.ID, RunRequest{Command: "echo b > b.txt"})
	got, err := e.Events(EventQuery{SandboxID: sb.ID, KindPrefix: "file.write", Limit: 1})
	if err != nil || len(got.Events) != 1 || got.Events[0].RunID != res2.Record.ID || !got.TraceEnabled {
		t.Fatalf("newest write of the sandbox: %+v %v", got, err)
	}
	if _, err := e.Events(EventQuery{RunID: "r-unknown"}); !errors.As(err, new(*NotFoundError)) {
		t.Fatalf("unknown run: %v", err)
	}
	n, err := e.ClearEvents(sb.ID)
	if err != nil || n == 0 {
		t.Fatalf("cleared %d, %v", n, err)
	}
	if left := runEvents(t, e, res1.Record.ID, ""); len(left) != 0 {
		t.Fatalf("events left after ClearEvents: %+v", left)
	}
	if _, err := e.SetTrace(sb.ID, false); err != nil {
		t.Fatal(err)
	}
	res3 := execOK(t, e, sb.ID, RunRequest{Command: "true", Trace: true})
	if evs := runEvents(t, e, res3.Record.ID, tracer.KindSpawn); len(evs) == 0 {
		t.Fatalf("RunRequest.Trace did not trace the run")
	}
	if _, err := os.Stat(filepath.Join(sb.Workspace, tracehooks.Dir)); err == nil {
		t.Fatalf("a run traced from outside installed the in-sandbox hooks")
	}
}

// TestTraceOverhead reports how much slower a traced run is, through the
// engine with real bwrap (best of three each). It fails only when a traced
// run breaks; the ratios are for people (go test -run Overhead -v).
func TestTraceOverhead(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	requireTracing(t)
	e := traceEngine(t)
	plain, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap")})
	if err != nil {
		t.Fatal(err)
	}
	traced := tracedSandbox(t, e, SandboxConfig{Backend: ptr("bwrap")})
	cases := []struct {
		name string
		argv []string
	}{
		{"python_1000_opens", []string{sysPython, "-c", "import os\nfor i in range(1000):\n    open('/etc/hostname' if i % 2 else os.devnull).close()"}},
		{"node_version", []string{"/usr/bin/node", "--version"}},
		{"npm_version", []string{"/usr/bin/npm", "--version"}},
	}
	for _, tc := range cases {
		if _, err := os.Stat(tc.argv[0]); err != nil {
			t.Logf("%s: skipped (%s not installed)", tc.name, tc.argv[0])
			continue
		}
		best := func(id string) time.Duration {
			var b time.Duration
			for i := 0; i < 3; i++ {
				start := time.Now()
				res := execOK(t, e, id, RunRequest{Argv: tc.argv})
				d := time.Since(start)
				if !res.Record.OK() {
					t.Fatalf("%s: %+v %q", tc.name, res.Record, res.Stderr)
				}
				if i == 0 || d < b {
					b = d
				}
			}
			return b
		}
		u, tr := best(plain.ID), best(traced.ID)
		t.Logf("%s: untraced %s, traced %s, ratio %.2f", tc.name, u.Round(time.Millisecond), tr.Round(time.Millisecond), float64(tr)/float64(u))
	}
}
