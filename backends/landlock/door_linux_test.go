package landlock

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// doorClient connects to the door at argv[1], says CONNECT and prints
// what came back ("" when the door closed the connection).
const doorClient = `import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
try:
    s.sendall(b"CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
    print("got", repr(s.recv(64).decode()))
except OSError as e:
    print("got", repr(""), e.errno)
`

// doorRun is a run that writes its door's port to the file port in its
// workspace, waits for a file go, and then reaches the door from its
// command and from a child.
const doorRun = `import os, socket, time
open("port", "w").write(os.environ["SENCLAW_PROXY_PORT"])
while not os.path.exists("go"):
    time.sleep(0.01)
def door(who):
    s = socket.create_connection(("127.0.0.1", int(os.environ["SENCLAW_PROXY_PORT"])), timeout=5)
    print(who, s.recv(16).decode(), flush=True)
door("command")
if os.fork() == 0:
    door("child"); os._exit(0)
os.wait()
`

// startDoorRun starts doorRun as u on b and returns its door's port, and
// a function that lets it go on, waits for it and returns its output and
// the refusals its door counted.
func startDoorRun(t *testing.T, b *Backend, u sandboxUser) (port string, finish func() (string, []string)) {
	t.Helper()
	d := newTestDirs(t, u)
	spec := newSpec(t, u, d.ws, python, "-c", doorRun)
	spec.Network = true
	spec.Net = fakeProxy(t, u)
	spec.Env = append(spec.Env, "SENCLAW_PROXY_PORT=3128")
	var mu sync.Mutex
	var refused []string
	spec.Net.Refused = func(from, why string) {
		mu.Lock()
		refused = append(refused, from+": "+why)
		mu.Unlock()
	}
	out, errb := &lockedBuffer{}, &lockedBuffer{}
	spec.Stdout, spec.Stderr = out, errb
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	p, err := b.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	testutil.WaitFor(t, 20*time.Second, "the run's door port", func() bool {
		b, _ := os.ReadFile(filepath.Join(d.ws, "port"))
		port = string(b)
		return port != ""
	})
	return port, func() (string, []string) {
		must(t, os.WriteFile(filepath.Join(d.ws, "go"), nil, 0o644))
		st, err := p.Wait()
		if err != nil || st.Code != 0 {
			t.Fatalf("exit %+v %v: %s", st, err, errb.String())
		}
		mu.Lock()
		defer mu.Unlock()
		return out.String(), append([]string(nil), refused...)
	}
}

// checkDoorRun checks what startDoorRun's finish returned: the command
// and its child reached the door, and the refusals are want, in words
// that contain each of the strings given.
func checkDoorRun(t *testing.T, out string, refused []string, want ...string) {
	t.Helper()
	for _, w := range []string{"command proxy", "child proxy"} {
		if !strings.Contains(out, w) {
			t.Errorf("the run did not reach its door: want %q in %q", w, out)
		}
	}
	all := strings.Join(refused, "\n")
	if len(refused) != len(want) {
		t.Errorf("%d refusals counted, want %d:\n%s", len(refused), len(want), all)
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no refusal says %q:\n%s", w, all)
		}
	}
}

// tryDoor runs doorClient on port with cmd (a Python interpreter as
// someone) and fails t unless the door closed the connection.
func tryDoor(t *testing.T, who string, cmd *exec.Cmd, port string) {
	t.Helper()
	cmd.Args = append(cmd.Args, "-c", doorClient, port)
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(got), "got ''") {
		t.Errorf("%s reached the door: %s %v", who, got, err)
	}
}

func asUID(uid, gid int) *exec.Cmd {
	c := exec.Command(python)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	return c
}

// TestTheDoorAnswersOnlyTheRun: a Landlock run's door to the proxy is a
// port on 127.0.0.1 that every process of this machine can connect to.
// It relays only the run's own connections (its command's and a child's
// of it): one from the real second user, one from root (the engine's
// uid, standing for any other host process) and one from a host process
// of the run's own uid outside the run are closed before anything is
// relayed, and each is counted with who made it. With and without the
// run's cgroups (the helper then stays as the run's parent).
func TestTheDoorAnswersOnlyTheRun(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	testutil.RequireRoot(t)
	other := testutil.SecondUser(t)
	for _, u := range sandboxUsers(t) {
		for _, cgroups := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s_cgroups_%v", u.Name, cgroups), func(t *testing.T) {
				t.Parallel()
				b := New(Options{})
				b.noCgroups = !cgroups
				port, finish := startDoorRun(t, b, u)
				tryDoor(t, "the second user", other.Command(python), port)
				tryDoor(t, "root", exec.Command(python), port)
				tryDoor(t, "a host process of the run's uid", asUID(u.UID(), u.UID()), port)
				out, refused := finish()
				checkDoorRun(t, out, refused, "uid "+strconv.Itoa(other.UID)+":", "uid 0:", "from a process outside the run")
			})
		}
	}
}

// ordinaryEngineEnv makes TestTheDoorOfAnOrdinaryEngine the engine's
// side, run as the second user.
const ordinaryEngineEnv = "SENCLAW_TEST_ORDINARY_DOOR"

// TestTheDoorOfAnOrdinaryEngine is TestTheDoorAnswersOnlyTheRun for an
// engine of an ordinary user, which keeps its own uid for the run (no
// credentials to drop) and reads its own processes' descriptors without
// privilege: the test binary runs as the real second user, as that
// user's engine; root, uid 65534 and another process of the second user
// try its run's door.
func TestTheDoorOfAnOrdinaryEngine(t *testing.T) {
	if os.Getenv(ordinaryEngineEnv) != "" {
		ordinaryDoorEngine(t)
		return
	}
	t.Parallel()
	requireLandlock(t)
	testutil.RequireRoot(t)
	other := testutil.SecondUser(t)
	self, err := os.Executable()
	must(t, err)
	dir, err := os.MkdirTemp("", "senclaw-landlock-door-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	// A link, where the test binary's own folder is root's alone: a copy
	// written here could still be open in a child another test forks
	// meanwhile (ETXTBSY).
	exe := filepath.Join(dir, "landlock.test")
	if err := os.Link(self, exe); err != nil {
		data, err := os.ReadFile(self)
		must(t, err)
		must(t, os.WriteFile(exe, data, 0o755))
	}
	must(t, os.Chmod(exe, 0o755))
	engine := other.Command(exe, "-test.run=^TestTheDoorOfAnOrdinaryEngine$", "-test.v")
	engine.Env = append(engine.Env, ordinaryEngineEnv+"=1", "CI=true")
	stdin, err := engine.StdinPipe()
	must(t, err)
	stdout, err := engine.StdoutPipe()
	must(t, err)
	engine.Stderr = engine.Stdout
	must(t, engine.Start())
	t.Cleanup(func() { engine.Process.Kill(); engine.Wait() })
	lines := bufio.NewScanner(stdout)
	var port string
	var log strings.Builder
	for port == "" && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if p, ok := strings.CutPrefix(lines.Text(), "door port "); ok {
			port = p
		}
	}
	if port == "" {
		t.Fatalf("the second user's engine gave no door:\n%s", log.String())
	}
	tryDoor(t, "root", exec.Command(python), port)
	tryDoor(t, "uid 65534", asUID(65534, 65534), port)
	tryDoor(t, "another process of the second user", other.Command(python), port)
	io.WriteString(stdin, "go\n")
	rest, _ := io.ReadAll(stdout)
	log.Write(rest)
	if err := engine.Wait(); err != nil || !strings.Contains(log.String(), "--- PASS: TestTheDoorOfAnOrdinaryEngine") {
		t.Errorf("the second user's engine: %v\n%s", err, log.String())
	}
}

// ordinaryDoorEngine is the engine's side of TestTheDoorOfAnOrdinaryEngine.
func ordinaryDoorEngine(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("the ordinary engine runs as root")
	}
	requireLandlock(t)
	u := sandboxUser{Name: "ordinary_user"}
	port, finish := startDoorRun(t, New(Options{}), u)
	fmt.Println("door port " + port)
	bufio.NewReader(os.Stdin).ReadString('\n')
	out, refused := finish()
	checkDoorRun(t, out, refused, "uid 0:", "uid 65534:", "from a process outside the run")
}

// lockedBuffer is a strings.Builder that a run's output and a test may
// use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
