//go:build linux

package daemon

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// machine is a shared /tmp of a test's own (mode 1777, as /tmp is), where
// the engine's fallback runtime dir goes when XDG_RUNTIME_DIR is unset, and
// the senclaw binary built once.
type machine struct {
	bin, tmp string
}

func sharedMachine(t *testing.T) machine {
	t.Helper()
	testutil.RequireRoot(t)
	bin := testutil.Senclaw(t)
	tmp := testutil.SandboxDir(t, "senclaw-shared-")
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	return machine{bin: bin, tmp: tmp}
}

// rootEnv is a root session with no XDG_RUNTIME_DIR (sudo, cron, a
// system unit): the runtime dir falls back to $TMPDIR/senclaw-0.
func (m machine) rootEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	home := filepath.Join(m.tmp, "root-home")
	os.MkdirAll(home, 0o700)
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + m.tmp,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "SENCLAW_DATA_DIR=" + filepath.Join(home, "data")}, extra...)
}

// senclaw runs the built CLI with env and stdin, within 60 s.
func (m machine) senclaw(t *testing.T, env []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(m.bin, args...)
	cmd.Env, cmd.Dir = env, "/"
	return runCmd(t, cmd, stdin)
}

// startServe starts cmd, a senclaw serve, and waits until it says its
// socket is there; it is killed when the test ends.
func startServe(t *testing.T, cmd *exec.Cmd, within time.Duration) {
	t.Helper()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = testutil.LogFile(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "socket ") {
				ready <- true
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case <-ready:
	case <-time.After(within):
		t.Fatalf("%v did not start", cmd.Args)
	}
}

func runCmd(t *testing.T, cmd *exec.Cmd, stdin string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not end within 60 s: %s %s", cmd.Args, out.String(), errb.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// TestARuntimeDirAnotherUserMadeFirstIsRefused: before root's engine
// starts, the second user makes its fallback runtime dir ($TMPDIR/senclaw-0)
// with links in it: info.json to a file of root's, daemon.lock and
// api.sock to where no file is yet. The engine refuses the folder, naming
// it, its owner and mode and what to do; nothing is written through the
// links, no root-owned file appears where they lead, and the CLI refuses
// the folder too (and starts no daemon there).
func TestARuntimeDirAnotherUserMadeFirstIsRefused(t *testing.T) {
	m := sharedMachine(t)
	u := testutil.SecondUser(t)
	victim := filepath.Join(m.tmp, "root-secret")
	if err := os.WriteFile(victim, []byte("root's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(m.tmp, "senclaw-0")
	target := filepath.Join(m.tmp, "made-through-a-link")
	u.Run(t, "sh", "-c", `mkdir -m 0777 "$1" && ln -s "$2" "$1/info.json" && ln -s "$3" "$1/daemon.lock" && ln -s "$3.sock" "$1/api.sock" && ln -s "$3.log" "$1/daemon.log"`,
		"sh", planted, victim, target)
	before := listDir(t, planted)

	env := m.rootEnv(t)
	code, _, stderr := m.senclaw(t, env, "", "serve", "--listen", "")
	if code == 0 {
		t.Fatalf("serve in another user's runtime dir exited 0: %s", stderr)
	}
	for _, want := range []string{planted, "uid " + strconv.Itoa(u.UID) + " (" + u.Name + ")", "0777", "XDG_RUNTIME_DIR"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("serve's refusal does not say %q: %s", want, stderr)
		}
	}
	code, _, stderr = m.senclaw(t, env, "", "ls")
	if code == 0 || !strings.Contains(stderr, planted) || !strings.Contains(stderr, u.Name) {
		t.Errorf("ls with another user's runtime dir: %d %s", code, stderr)
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's own\n" {
		t.Errorf("root's file was written through the planted link: %q", data)
	}
	for _, p := range []string{target, target + ".sock", target + ".log"} {
		if fi, err := os.Lstat(p); err == nil {
			t.Errorf("%s was made through a planted link (%v)", p, fi.Mode())
		}
	}
	if after := listDir(t, planted); after != before {
		t.Errorf("the planted folder changed:\nbefore %s\nafter  %s", before, after)
	}
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// fakeServer is a server of the second user's on a Unix socket that counts
// what each connection sends it; it answers nothing.
const fakeServer = `
import socket, sys, threading
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(64)
print("ready", flush=True)
def take(c):
    c.settimeout(5)
    n = 0
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            n += len(b)
    except Exception:
        pass
    print("conn", n, flush=True)
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=take, args=(c,), daemon=True).start()
`

// startFake starts fakeServer as u on sock and returns its lines.
func startFake(t *testing.T, u testutil.OtherUser, sock string) <-chan string {
	t.Helper()
	cmd := u.Command("/usr/bin/python3", "-c", fakeServer, sock)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = testutil.LogFile(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "ready" {
			t.Fatalf("the fake server: %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fake server did not start")
	}
	return lines
}

// TestAFakeServerOnTheSocketReceivesNothing: another user's server answers
// on the engine's socket path, either in a runtime dir of root's own (root
// moved it there: what the other user reached with the takeover) or in a
// runtime dir the other user made. The CLI, the hook, the MCP stdio server
// and the agent shell refuse it with the reason, and the server receives
// not one byte.
func TestAFakeServerOnTheSocketReceivesNothing(t *testing.T) {
	m := sharedMachine(t)
	u := testutil.SecondUser(t)
	hookJSON := `{"hook_event_name":"PreToolUse","cwd":"/tmp","tool_name":"Bash","tool_input":{"command":"echo secret"}}`
	mcpInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	for _, tc := range []struct {
		name string
		// dir makes the runtime dir (XDG_RUNTIME_DIR/senclaw) with the
		// fake server's socket in it; want is what the refusal says.
		dir  func(t *testing.T, xdg string) <-chan string
		want string
	}{
		{"socket_in_roots_own_dir", func(t *testing.T, xdg string) <-chan string {
			own := filepath.Join(m.tmp, "other-"+filepath.Base(xdg))
			u.Run(t, "mkdir", "-m", "0700", own)
			lines := startFake(t, u, filepath.Join(own, "s.sock"))
			rt := filepath.Join(xdg, "senclaw")
			os.MkdirAll(rt, 0o700)
			if err := os.Rename(filepath.Join(own, "s.sock"), filepath.Join(rt, "api.sock")); err != nil {
				t.Fatal(err)
			}
			return lines
		}, "is served by uid " + strconv.Itoa(u.UID)},
		{"dir_of_the_other_user", func(t *testing.T, xdg string) <-chan string {
			os.Chmod(xdg, 0o1777) // a shared folder, as /tmp
			rt := filepath.Join(xdg, "senclaw")
			u.Run(t, "mkdir", "-m", "0755", rt)
			return startFake(t, u, filepath.Join(rt, "api.sock"))
		}, "runtime dir " + filepath.Join("XDG", "senclaw")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xdg := filepath.Join(m.tmp, "xdg-"+tc.name)
			os.Mkdir(xdg, 0o755)
			lines := tc.dir(t, xdg)
			want := strings.Replace(tc.want, "XDG", xdg, 1)
			env := m.rootEnv(t, "XDG_RUNTIME_DIR="+xdg)
			for _, c := range []struct {
				name  string
				stdin string
				args  []string
			}{
				{"cli", "", []string{"run", "--env", "TOKEN=hunter2", "--", "true"}},
				{"hook", hookJSON, []string{"hook", "claude-code"}},
				{"mcp_stdio", mcpInit, []string{"sandbox-server"}},
				{"agent_shell", "", []string{"agent-shell", "-c", "echo secret"}},
				{"url", "", []string{"url"}},
				{"stop", "", []string{"stop"}},
			} {
				code, stdout, stderr := m.senclaw(t, env, c.stdin, c.args...)
				said := stdout + stderr
				if c.name == "hook" {
					// A hook answers (exit 0) with a denial and the reason.
					if !strings.Contains(stdout, `"deny"`) || !strings.Contains(said, want) {
						t.Errorf("%s: %d %s", c.name, code, said)
					}
					continue
				}
				if code == 0 || !strings.Contains(said, want) {
					t.Errorf("%s: exit %d, want a refusal saying %q: %s", c.name, code, want, said)
				}
			}
			// Every connection the server saw sent nothing.
			deadline := time.After(2 * time.Second)
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						return
					}
					if l != "conn 0" {
						t.Errorf("the other user's server received: %s", l)
					}
					continue
				case <-deadline:
				}
				break
			}
		})
	}
}

// TestTwoUsersEnginesKeepToTheirOwnFallbackDirs: root's engine and the
// second user's, both without XDG_RUNTIME_DIR in one /tmp, each make and
// use their own $TMPDIR/senclaw-<uid>; each user's CLI reaches its own, and
// stopping root's leaves the other's running.
func TestTwoUsersEnginesKeepToTheirOwnFallbackDirs(t *testing.T) {
	m := sharedMachine(t)
	u := testutil.SecondUser(t)
	otherData := filepath.Join(m.tmp, "other-data")
	asOther := func(args ...string) *exec.Cmd {
		cmd := u.Command(m.bin, append([]string{"--data-dir", otherData}, args...)...)
		cmd.Env = append(cmd.Env, "TMPDIR="+m.tmp, "SENCLAW_BACKENDS=direct")
		return cmd
	}
	startServe(t, asOther("serve", "--listen", ""), 30*time.Second)
	rootServe := exec.Command(m.bin, "serve", "--listen", "")
	rootServe.Env = m.rootEnv(t, "SENCLAW_BACKENDS=direct")
	startServe(t, rootServe, 30*time.Second)

	for uid, dir := range map[int]string{0: filepath.Join(m.tmp, "senclaw-0"), u.UID: filepath.Join(m.tmp, "senclaw-"+strconv.Itoa(u.UID))} {
		fi, err := os.Lstat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
			t.Errorf("%s: uid %d, %v", dir, st.Uid, fi.Mode())
		}
	}
	if code, _, stderr := runCmd(t, asOther("caps"), ""); code != 0 {
		t.Fatalf("the other user's CLI: %d %s", code, stderr)
	}
	if code, _, stderr := m.senclaw(t, m.rootEnv(t), "", "caps"); code != 0 {
		t.Fatalf("root's CLI: %d %s", code, stderr)
	}
	if code, stdout, stderr := m.senclaw(t, m.rootEnv(t), "", "stop"); code != 0 || !strings.Contains(stdout, "stopped") {
		t.Fatalf("root's stop: %d %s %s", code, stdout, stderr)
	}
	if code, _, stderr := runCmd(t, asOther("caps"), ""); code != 0 {
		t.Fatalf("the other user's engine after root's stopped: %d %s", code, stderr)
	}
	if code, stdout, stderr := runCmd(t, asOther("stop"), ""); code != 0 || !strings.Contains(stdout, "stopped") {
		t.Fatalf("the other user's stop: %d %s %s", code, stdout, stderr)
	}
}

// TestASquattedPortIsRefused: the second user listens first on the port
// the engine is configured for (SENCLAW_LISTEN, --listen, and 7878 itself
// when it is free here). serve exits 2, naming the holder's uid and
// process, and never listens elsewhere; a port held by a program of root's
// own is named too (with the default port, serve falls back and says so).
func TestASquattedPortIsRefused(t *testing.T) {
	m := sharedMachine(t)
	u := testutil.SecondUser(t)
	port := testutil.FreePort(t)
	pid, _ := u.HoldPort(t, port)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	who := "pid " + strconv.Itoa(pid) + " (python3) of uid " + strconv.Itoa(u.UID) + " (" + u.Name + ")"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"senclaw_listen", []string{"SENCLAW_LISTEN=" + addr}, []string{"serve"}},
		{"listen_flag", nil, []string{"serve", "--listen", addr}},
	} {
		code, stdout, stderr := m.senclaw(t, m.rootEnv(t, append(tc.env, "SENCLAW_BACKENDS=direct")...), "", tc.args...)
		if code != 2 || !strings.Contains(stderr, who) || !strings.Contains(stderr, addr) || strings.Contains(stdout, "listening on") {
			t.Errorf("%s: exit %d, want 2 naming %q:\n%s%s", tc.name, code, who, stdout, stderr)
		}
	}

	// 7878 itself, when nothing of this machine holds it (it is released
	// at the end of the test).
	if l, err := net.Listen("tcp", "127.0.0.1:7878"); err != nil {
		t.Logf("127.0.0.1:7878 is in use here (%v): the default port's case is not run", err)
	} else {
		l.Close()
		pid, stop := u.HoldPort(t, 7878)
		code, stdout, stderr := m.senclaw(t, m.rootEnv(t, "SENCLAW_BACKENDS=direct"), "", "serve")
		if code != 2 || !strings.Contains(stderr, "pid "+strconv.Itoa(pid)+" (python3) of uid "+strconv.Itoa(u.UID)) || strings.Contains(stdout, "listening on") {
			t.Errorf("the default port held by %s: exit %d\n%s%s", u.Name, code, stdout, stderr)
		}
		stop()
		testDefaultPortOfOurOwn(t, m)
	}

	// Held by root's own program: named, and with the default port a
	// fallback that says so.
	mine, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	ownAddr := mine.Addr().String()
	code, _, stderr := m.senclaw(t, m.rootEnv(t, "SENCLAW_BACKENDS=direct"), "", "serve", "--listen", ownAddr)
	if code == 0 || !strings.Contains(stderr, "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(stderr, "uid 0 (root)") {
		t.Errorf("a port of root's own, given: exit %d %s", code, stderr)
	}
}

// testDefaultPortOfOurOwn: 7878 held by this (root's) test process: serve
// listens on another port and its note names the holder and what to do.
func testDefaultPortOfOurOwn(t *testing.T, m machine) {
	t.Helper()
	var l net.Listener
	testutil.WaitFor(t, 10*time.Second, "127.0.0.1:7878 to be free again", func() bool {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:7878")
		return err == nil
	})
	defer l.Close()
	cmd := exec.Command(m.bin, "serve")
	cmd.Env = m.rootEnv(t, "SENCLAW_BACKENDS=direct")
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	listening := ""
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			listening = u
			break
		}
	}
	go io.Copy(io.Discard, out)
	testutil.WaitFor(t, 5*time.Second, "serve's note", func() bool { return strings.Contains(stderr.String(), "note:") })
	note := stderr.String()
	if listening == "" || strings.HasSuffix(listening, ":7878") || !strings.Contains(note, "pid "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(note, "listens on "+listening+" instead") || !strings.Contains(note, "SENCLAW_LISTEN") {
		t.Errorf("7878 held by root's own process: listening on %q, said %q", listening, note)
	}
}

// cmdlinePoller reads every process's command line as u, as another user
// watching ps would, until stop; it returns what it saw, one line each.
func cmdlinePoller(t *testing.T, u testutil.OtherUser) (stop func() string) {
	t.Helper()
	cmd := u.Command("/usr/bin/python3", "-c", `
import os, sys, time
seen = set()
end = time.time() + 120
while time.time() < end:
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                line = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        if line and line not in seen:
            seen.add(line)
            print(line, flush=True)
`)
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testutil.WaitFor(t, 10*time.Second, "the poller's first lines", func() bool { return out.String() != "" })
	return func() string {
		time.Sleep(300 * time.Millisecond) // one more pass
		cmd.Process.Kill()
		cmd.Wait()
		return out.String()
	}
}

// TestTheLoginCodeIsOnNoCommandLine: while the second user reads every
// command line of the machine, senclaw open opens the dashboard: the
// browser (a stand-in xdg-open) is handed an owner-only page's path, and
// the code it holds is on no command line. The page's code logs in once
// (posted as the page's form posts it) and the page is gone then. As a
// control, the same watcher does catch a URL put on a command line the
// old way (xdg-open "$(senclaw url)").
func TestTheLoginCodeIsOnNoCommandLine(t *testing.T) {
	m := sharedMachine(t)
	u := testutil.SecondUser(t)
	xdg := filepath.Join(m.tmp, "root-xdg")
	os.Mkdir(xdg, 0o700)
	out := filepath.Join(m.tmp, "browser-saw")
	os.Mkdir(out, 0o700)
	fakebin := filepath.Join(m.tmp, "fakebin")
	os.Mkdir(fakebin, 0o755)
	// The stand-in browser keeps the page and what it was given, and
	// stays long enough for any watcher to read its command line.
	os.WriteFile(filepath.Join(fakebin, "xdg-open"), []byte(`#!/bin/sh
cp "$1" "$OUT/page.html" 2>/dev/null
stat -c '%a %U' "$1" > "$OUT/mode" 2>/dev/null
stat -c '%a' "$(dirname "$1")" > "$OUT/dirmode" 2>/dev/null
sleep 0.5
`), 0o755)
	env := m.rootEnv(t, "XDG_RUNTIME_DIR="+xdg, "SENCLAW_BACKENDS=direct", "OUT="+out)
	env[0] = "PATH=" + fakebin + ":/usr/local/bin:/usr/bin:/bin"

	serve := exec.Command(m.bin, "serve", "--listen", "127.0.0.1:0")
	serve.Env = env
	stdout, _ := serve.StdoutPipe()
	serve.Stderr = testutil.LogFile(t)
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { serve.Process.Signal(syscall.SIGTERM); serve.Wait() }()
	sc := bufio.NewScanner(stdout)
	base := ""
	for sc.Scan() && base == "" {
		base, _ = strings.CutPrefix(sc.Text(), "listening on ")
	}
	go io.Copy(io.Discard, stdout)
	if base == "" {
		t.Fatal("serve did not say where it listens")
	}

	stop := cmdlinePoller(t, u)
	code, said, errOut := m.senclaw(t, env, "", "open")
	if code != 0 {
		t.Fatalf("senclaw open: %d %s %s", code, said, errOut)
	}
	var page []byte
	testutil.WaitFor(t, 10*time.Second, "the browser to get the page", func() bool {
		page, _ = os.ReadFile(filepath.Join(out, "page.html"))
		return len(page) > 0
	})
	seen := stop()
	m1 := regexp.MustCompile(`name="code" value="([0-9a-f]{64})"`).FindStringSubmatch(string(page))
	if m1 == nil {
		t.Fatalf("the page holds no code: %s", page)
	}
	loginCode := m1[1]
	if strings.Contains(seen, loginCode) {
		t.Errorf("the login code was on a command line another user read:\n%s", seen)
	}
	if !strings.Contains(seen, "xdg-open "+filepath.Join(xdg, "senclaw")) {
		t.Errorf("the watcher did not see the browser start on the page's path (so it proves nothing):\n%s", seen)
	}
	if mode, _ := os.ReadFile(filepath.Join(out, "mode")); string(mode) != "600 root\n" {
		t.Errorf("the page is %q, want 600 root", mode)
	}
	if mode, _ := os.ReadFile(filepath.Join(out, "dirmode")); string(mode) != "700\n" {
		t.Errorf("the page's folder is %q, want 700", mode)
	}
	post := func() int {
		resp, err := http.Post(base+"/login", "application/x-www-form-urlencoded", strings.NewReader("code="+loginCode))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := post(); status != 200 {
		t.Errorf("the page's code: %d", status)
	}
	if status := post(); status != 401 {
		t.Errorf("the page's code a second time: %d", status)
	}
	testutil.WaitFor(t, 5*time.Second, "the used page to be removed", func() bool {
		entries, _ := os.ReadDir(filepath.Join(xdg, "senclaw"))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "login-") {
				return false
			}
		}
		return true
	})

	// The control: a URL on a command line is read by the watcher.
	stop = cmdlinePoller(t, u)
	code, link, errOut := m.senclaw(t, env, "", "url")
	if code != 0 {
		t.Fatalf("senclaw url: %d %s", code, errOut)
	}
	link = strings.TrimSpace(link)
	oldWay := exec.Command(filepath.Join(fakebin, "xdg-open"), link)
	oldWay.Env = env
	oldWay.Run()
	if seen := stop(); !strings.Contains(seen, link) {
		t.Errorf("the watcher missed a URL on a command line, so its silence above proves nothing:\n%s", seen)
	}
}
