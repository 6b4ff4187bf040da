package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/tracehooks"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/landlock"
	"github.com/senclaw/sandbox/backends/tracer"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestMain makes the test binary the Landlock helper when it is started as
// one, as main does for senclaw.
// TestMain makes the test binary the engine's helpers too: the Landlock
// helper here, the envexec launcher in testutil.Main.
func TestMain(m *testing.M) { testutil.Main(m) }

// requireLandlock skips without a usable Landlock, except under CI.
func requireLandlock(t *testing.T) {
	t.Helper()
	abi, err := landlock.ABIVersion()
	if err == nil && abi < landlock.MinABI {
		err = fmt.Errorf("landlock ABI %d is too old", abi)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("landlock is required under CI: %v", err)
		}
		t.Skip(err)
	}
}

func sandboxCredential() *backends.Credential {
	if os.Geteuid() == 0 {
		return &backends.Credential{UID: 65534, GID: 65534}
	}
	return nil
}

// landlockEngine is an engine whose only isolating backend is Landlock,
// as on a machine where bubblewrap cannot start.
func landlockEngine(t *testing.T, opts ...engineOpt) *Engine {
	t.Helper()
	requireLandlock(t)
	return newTestEngine(t, []backends.Backend{landlock.New(landlock.Options{SandboxUser: sandboxCredential()}), direct.New()}, opts...)
}

func TestEngineRunsUnderLandlockAndSaysSo(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	caps := e.Capabilities(context.Background(), true)
	if caps.State != Isolated || caps.Recommended != "landlock" {
		t.Fatalf("a machine with only Landlock: %+v", caps)
	}
	res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Command: "id -u; echo out; echo err >&2"})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Record
	if r.Isolation != "landlock" || r.Backend != "landlock" || !r.OK() {
		t.Fatalf("record %+v", r)
	}
	if os.Geteuid() == 0 && strings.HasPrefix(res.Stdout, "0\n") {
		t.Fatal("sandboxed code ran as root")
	}
	joined := strings.Join(r.Enforced, "; ")
	for _, want := range []string{"Landlock ABI", "seccomp", "disk"} {
		if !strings.Contains(joined, want) {
			t.Errorf("enforced %q lacks %s", joined, want)
		}
	}
	if !strings.Contains(strings.Join(r.Missing, "; "), "/proc lists every process") {
		t.Errorf("missing %q does not say that processes are visible", r.Missing)
	}
}

// TestAutoPrefersBwrapThenLandlock: a run with no backend named gets
// bwrap where it works and Landlock where it does not.
func TestAutoPrefersBwrapThenLandlock(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	requireLandlock(t)
	user := sandboxCredential()
	cases := []struct {
		name string
		bin  string
		want string
	}{{"bwrap_works", "", "bwrap"}, {"bwrap_cannot_start", "/nonexistent/bwrap", "landlock"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newTestEngine(t, []backends.Backend{
				bwrap.New(bwrap.Options{Binary: tc.bin, SandboxUser: user}),
				landlock.New(landlock.Options{SandboxUser: user}),
				direct.New(),
			})
			res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Argv: []string{"true"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Record.Isolation != tc.want {
				t.Fatalf("isolation %q, want %q", res.Record.Isolation, tc.want)
			}
			if caps := e.Capabilities(context.Background(), false); caps.State != Isolated || caps.Recommended != tc.want {
				t.Fatalf("caps %+v", caps)
			}
		})
	}
}

func TestTheEnginesOwnFilesAreInvisibleUnderLandlock(t *testing.T) {
	t.Setenv("SENCLAW_TEST_SECRET", "hunter2")
	for _, mode := range []string{"strict", "allowlist", "open"} {
		t.Run(mode, func(t *testing.T) { checkEngineFilesInvisible(t, landlockEngine(t), mode) })
	}
}

func TestLandlockTimeoutKeepsOutputAndKillsTheTree(t *testing.T) {
	t.Parallel()
	checkTimeoutKeepsOutput(t, landlockEngine(t))
}

func TestLandlockStatsAndKill(t *testing.T) {
	t.Parallel()
	checkStatsAndKill(t, landlockEngine(t))
}

// TestLandlockNetworkGoesThroughTheProxy: with the network on, a Landlock
// sandbox reaches this machine's service named in its loopback rule
// through the engine's real proxy, and nothing else: not another
// loopback port, not the service directly.
func TestLandlockNetworkGoesThroughTheProxy(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	named := localHTTP(t)
	other := localHTTP(t)
	script := fmt.Sprintf(`curl -s -o /dev/null -w "named %%{http_code}\n" http://127.0.0.1:%d/
curl -s -o /dev/null -w "other %%{http_code}\n" http://127.0.0.1:%d/
curl -s --noproxy '*' -o /dev/null -w "direct %%{http_code}\n" http://127.0.0.1:%d/ || echo direct refused`, named, other, named)
	res, err := e.RunOnce(context.Background(), SandboxConfig{Network: ptr(true), Loopback: []int{named}}, RunRequest{Command: script})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"named 200", "other 403", "direct 000"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("want %q in %q (stderr %q)", want, res.Stdout, res.Stderr)
		}
	}
	if res.Record.Isolation != "landlock" || !strings.Contains(strings.Join(res.Record.Enforced, "; "), "not that port on another host") {
		t.Errorf("record %+v", res.Record)
	}
}

// TestLandlockListenBindsLoopbackOnly: listen ports under Landlock bind in
// the host's network; the engine answers bind and listen, so a port is
// bound on a loopback address only (without that guard, the run is
// refused, with the reason, unless the landlockListen setting allows it).
func TestLandlockListenBindsLoopbackOnly(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	port := testutil.FreePort(t)
	cfg := SandboxConfig{Listen: []int{port}}
	if !landlockBindsLoopback() {
		_, err := e.RunOnce(context.Background(), cfg, RunRequest{Argv: []string{"true"}})
		if err == nil || !strings.Contains(err.Error(), "landlockListen") {
			t.Fatalf("listen ports under landlock: %v", err)
		}
		t.Skip("the engine's guard cannot run here")
	}
	res, err := e.RunOnce(context.Background(), cfg, RunRequest{Command: fmt.Sprintf(`python3 -c '
import socket
def attempt(what, fn):
    try:
        fn(); print(what, "ok")
    except OSError as e:
        print(what, "refused")
attempt("every_address", lambda: socket.socket().bind(("0.0.0.0", %d)))
attempt("unbound_listen", lambda: socket.socket().listen(1))
s = socket.socket(); s.bind(("127.0.0.1", %d)); s.listen(1); print("listening")
attempt("other_port", lambda: socket.socket().bind(("127.0.0.1", %d)))'`, port, port, testutil.FreePort(t))})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"every_address refused", "unbound_listen refused", "listening", "other_port refused"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("want %q: stdout %q stderr %q", want, res.Stdout, res.Stderr)
		}
	}
	if !strings.Contains(strings.Join(res.Record.Enforced, "; "), "only on a loopback address") {
		t.Errorf("the record does not say where the port is open: %q", res.Record.Enforced)
	}
}

// localHTTP serves 200 on 127.0.0.1 and returns its port.
func localHTTP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// TestLandlockNetworkNote: the note of a landlock sandbox says what its
// network rules get there, not what a namespace would give.
func TestLandlockNetworkNote(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	cases := []struct {
		name string
		cfg  SandboxConfig
		want []string
	}{
		{"off", SandboxConfig{}, []string{"network off (enforced by landlock)", "no socket can be made"}},
		{"on", SandboxConfig{Network: ptr(true), Loopback: []int{5432}}, []string{"enforced by landlock and the engine's proxy", "not the door's port on another host", "ports [5432] at 127.0.0.1 and ::1 only, through the proxy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb, err := e.Create(context.Background(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			note := e.CreateNotes(context.Background(), sb).Text()
			for _, w := range tc.want {
				if !strings.Contains(note, w) {
					t.Errorf("note %q lacks %q", note, w)
				}
			}
		})
	}
}

// TestLandlockTracesFromOutside: a traced run under Landlock is followed
// by strace from outside, with no hooks inside that the traced code could
// tamper with.
func TestLandlockTracesFromOutside(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	sb, err := e.Create(context.Background(), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "cat /etc/hostname > copied", Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := e.Events(EventQuery{RunID: res.Record.ID})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, x := range ev.Events {
		seen = append(seen, x.Source+" "+x.Kind+" "+x.Target)
	}
	all := strings.Join(seen, "\n")
	if !strings.Contains(all, "strace proc.spawn /usr/bin/cat") || !strings.Contains(all, "strace file.write "+sb.Workspace+"/copied") {
		t.Errorf("events:\n%s", all)
	}
	if _, err := os.Stat(filepath.Join(sb.Workspace, tracehooks.Dir)); err == nil {
		t.Errorf("in-sandbox hooks were installed for a run strace follows from outside")
	}
}

// TestTheLandlockHelperIsMachinery: the helper that supervises a run
// without a cgroup is the engine's, not a process of the sandbox.
func TestTheLandlockHelperIsMachinery(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]bool{
		"/usr/local/bin/senclaw " + landlock.HelperCommand: true,
		"sleep 300":                            false,
		"sh -c echo " + landlock.HelperCommand: false,
	} {
		if machinery(cmd) != want {
			t.Errorf("machinery(%q) = %v", cmd, !want)
		}
	}
}

// TestLandlockDiskQuota: the workspace quota holds under Landlock, for
// one big file (RLIMIT_FSIZE) and many small ones (the watchdog).
func TestLandlockDiskQuota(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	cases := []struct {
		name, command, want string
	}{
		{"one_big_file", "head -c 33554432 /dev/zero > big", ""},
		{"many_small_files", "i=0; while true; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); sleep 0.05; done", "disk quota"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := e.RunOnce(context.Background(), SandboxConfig{DiskMB: ptr(16), TimeoutMs: ptr(20000)}, RunRequest{Command: tc.command})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want != "" && !strings.Contains(res.Record.Killed, tc.want):
				t.Fatalf("record %+v", res.Record)
			case tc.want == "" && (res.Record.OK() || !strings.Contains(res.Stderr, "File size limit exceeded")):
				t.Fatalf("a 32 MiB file under a 16 MB quota: %+v %q", res.Record, res.Stdout)
			}
		})
	}
}

// TestLandlockShellGetsATerminal: an attached run in a
// Landlock sandbox gets the terminal as its controlling one, of the asked
// size, typed input and a resize reach it, and TIOCSTI stays refused.
func TestLandlockShellGetsATerminal(t *testing.T) {
	t.Parallel()
	e := landlockEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("landlock")})
	if err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	control := make(chan Control, 4)
	out := &lockedBuffer{}
	started := make(chan RunRecord, 1)
	script := `test -t 0 && echo stdin-tty; test -t 1 && echo stdout-tty
stty size; read line; echo "got $line"
python3 -c 'import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x")
    print("injected")
except OSError as e:
    print("tiocsti refused", e.errno)'
trap 'stty size; exit 0' WINCH; echo ready; while :; do sleep 0.05; done`
	go func() {
		<-started
		io.WriteString(stdinW, "typed\n")
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "ready") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		control <- Control{Cols: 100, Rows: 30}
	}()
	att := &Attachment{Stdin: stdinR, Terminal: &TerminalRequest{Cols: 80, Rows: 24, FDs: []int{0, 1, 2}}, Control: control,
		Started: func(r RunRecord) { started <- r }}
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: script, Attach: att, Stdout: out, TimeoutMs: 20000})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out.String(), "\r\n", "\n")
	if !res.Record.Terminal || !res.Record.OK() || res.Record.Isolation != "landlock" {
		t.Fatalf("record %+v\nout %q", res.Record, got)
	}
	for _, want := range []string{"stdin-tty\n", "stdout-tty\n", "24 80\n", "got typed\n", "tiocsti refused 1\n", "30 100\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal's output %q lacks %q", got, want)
		}
	}
}

// TestTerminalOutputFollowsTheStart: the caller hears that an attached
// run started (and whether it got its terminal) before any of the
// terminal's output, so that it can put its own terminal raw first. A
// traced Landlock run is started slowly enough for the command to write
// first (senclaw shell showed "hi\r\r\n": the CLI's terminal was still
// cooked when the output came).
func TestTerminalOutputFollowsTheStart(t *testing.T) {
	t.Parallel()
	if ok, why := tracer.Available(); !ok {
		t.Skip(why)
	}
	e := landlockEngine(t)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("landlock")})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	started, early := false, false
	out := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		early = early || !started
		return len(p), nil
	})
	att := &Attachment{Terminal: &TerminalRequest{Cols: 80, Rows: 24, FDs: []int{0, 1, 2}},
		Started: func(RunRecord) { mu.Lock(); started = true; mu.Unlock() }}
	for i := 0; i < 3; i++ {
		res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "echo early", Attach: att, Stdout: out, Trace: true})
		if err != nil || !res.Record.Terminal || !res.Record.OK() {
			t.Fatalf("run: %v %+v", err, res)
		}
		mu.Lock()
		if early {
			t.Fatal("the terminal's output came before the caller heard the run started")
		}
		started = false
		mu.Unlock()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
