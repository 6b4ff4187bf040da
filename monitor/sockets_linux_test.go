package monitor

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestPortHolderAndSocketsSeeARealListener: a listener of this test
// process is found by its port, with the process's command and working
// directory, and among the process's sockets (listening first); a port
// nobody holds has no holder.
func TestPortHolderAndSocketsSeeARealListener(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	h, ok, err := PortHolder(ctx, port)
	if err != nil || !ok {
		t.Fatalf("holder of %d: %v %v", port, ok, err)
	}
	wd, _ := os.Getwd()
	if h.Pid != os.Getpid() || h.Cwd != wd || h.Command == "" {
		t.Fatalf("holder %+v, want pid %d in %s", h, os.Getpid(), wd)
	}
	socks, truncated := Sockets(ctx, []int{os.Getpid()}, 200)
	if truncated || len(socks) < 2 || !socks[0].Listening() {
		t.Fatalf("sockets %+v (truncated %v)", socks, truncated)
	}
	want := "127.0.0.1:" + strconv.Itoa(port)
	listening := slices.IndexFunc(socks, func(s Socket) bool { return s.Listening() && s.Local == want && s.Kind == "tcp4" })
	connected := slices.IndexFunc(socks, func(s Socket) bool { return s.State == "ESTABLISHED" && s.Remote == want })
	if listening < 0 || connected < 0 {
		t.Fatalf("no listener or connection on %s in %+v", want, socks)
	}
	if !ListensOn(ctx, []int{os.Getpid()}, port) || ListensOn(ctx, []int{os.Getpid()}, port+1) {
		t.Fatalf("ListensOn does not see exactly the listener on %d", port)
	}
	if few, truncated := Sockets(ctx, []int{os.Getpid()}, 1); len(few) != 1 || !truncated {
		t.Fatalf("a bound of 1 gave %d sockets (truncated %v)", len(few), truncated)
	}
	l.Close()
	c.Close()
	if _, ok, _ := PortHolder(ctx, port); ok {
		t.Fatalf("port %d still has a holder after close", port)
	}
}

// TestLeftoversFindOnlyTheMarkedTree: a process carrying the launch's
// marker in its environment is found, a child that inherited it too, and
// an unmarked one never.
func TestLeftoversFindOnlyTheMarkedTree(t *testing.T) {
	t.Parallel()
	marker := "SENCLAW_TEST_LAUNCH=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("/bin/sh", "-c", "sleep 60 & wait")
		cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	marked := start(marker)
	other := start("SENCLAW_TEST_LAUNCH=other")
	var found []int
	for deadline := time.Now().Add(5 * time.Second); len(found) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if found, err = Leftovers(context.Background(), nil, marker, os.Getuid()); err != nil {
			t.Fatal(err)
		}
	}
	if len(found) != 2 || !slices.Contains(found, marked.Process.Pid) || slices.Contains(found, other.Process.Pid) {
		t.Fatalf("leftovers %v, want the marked shell %d and its sleep, not %d", found, marked.Process.Pid, other.Process.Pid)
	}
	if found, _ := Leftovers(context.Background(), nil, marker, os.Getuid()+1); len(found) != 0 {
		t.Fatalf("processes of another uid were matched: %v", found)
	}
}
