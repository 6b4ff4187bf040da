package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// OtherUser is a real second Unix account on this machine: the local
// user the engine must treat as hostile (another person on a shared
// box). Its home is made by useradd -m and kept between tests.
type OtherUser struct {
	Name     string
	UID, GID int
	Home     string
}

var otherUsers sync.Map // name -> *otherUserOnce

type otherUserOnce struct {
	once sync.Once
	u    OtherUser
	err  error
}

// LocalUser returns the Unix account name, creating it (useradd -m, a
// shell, no password) the first time. It needs root: without it the test
// is skipped, and under CI it fails. Names are short and start with
// "senclaw-" so that a machine's own accounts are never touched.
func LocalUser(t testing.TB, name string) OtherUser {
	t.Helper()
	RequireRoot(t)
	v, _ := otherUsers.LoadOrStore(name, &otherUserOnce{})
	o := v.(*otherUserOnce)
	o.once.Do(func() { o.u, o.err = ensureUser(name) })
	if o.err != nil {
		t.Fatalf("making the local user %s: %v", name, o.err)
	}
	return o.u
}

// SecondUser is LocalUser("senclaw-other"): the other person on the box.
func SecondUser(t testing.TB) OtherUser { return LocalUser(t, "senclaw-other") }

func ensureUser(name string) (OtherUser, error) {
	if _, err := user.Lookup(name); err != nil {
		out, err := exec.Command("useradd", "-m", "-s", "/bin/sh", name).CombinedOutput()
		if err != nil {
			if _, again := user.Lookup(name); again != nil { // not made by a parallel test either
				return OtherUser{}, fmt.Errorf("useradd: %v: %s", err, out)
			}
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return OtherUser{}, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return OtherUser{Name: name, UID: uid, GID: gid, Home: u.HomeDir}, nil
}

// Command is name with args run as u: its uid, gid and no other groups,
// HOME, USER and LOGNAME its own, a PATH, and nothing else of the test's
// environment (the other user has no part of ours). XDG_RUNTIME_DIR is
// not set: with no logind session there is none, as with sudo or cron.
func (u OtherUser) Command(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}}
	c.Env = []string{"HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name, "PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=" + os.TempDir()}
	c.Dir = "/"
	return c
}

// Run runs name with args as u and returns its combined output; a failure
// fails t with that output.
func (u OtherUser) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := u.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("as %s: %s %v: %v\n%s", u.Name, name, args, err, out)
	}
	return string(out)
}

// HoldPort starts, as u, a program (python3) listening on 127.0.0.1:port,
// as another user squatting a port would; stop, or the test's end, ends
// it. pid is the program's.
func (u OtherUser) HoldPort(t testing.TB, port int) (pid int, stop func()) {
	t.Helper()
	cmd := u.Command("/usr/bin/python3", "-c", `
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
print("ready", flush=True)
time.sleep(600)`, strconv.Itoa(port))
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("holding port %d as %s: %q", port, u.Name, line)
	}
	return cmd.Process.Pid, stop
}
