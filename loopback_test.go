package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// listenIn listens on 127.0.0.1:port in the network namespace of pid. The
// socket stays of that namespace; the thread that joined it is thrown
// away with its goroutine, never reused.
func listenIn(t *testing.T, pid, port int) net.Listener {
	t.Helper()
	type res struct {
		l   net.Listener
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		ns, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(ns, unix.CLONE_NEWNET)
			unix.Close(ns)
		}
		if err != nil {
			ch <- res{nil, err}
			return
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		ch <- res{l, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.l.Close() })
	return r.l
}

// TestLoopbackBelow1024 runs senclaw run --loopback 22,443 against a
// daemon in a network namespace of the test's own, where a stand-in SSH
// (22) and HTTPS (443) service listen on 127.0.0.1: the sandbox reaches
// both at their own ports. No port of this machine is touched.
func TestLoopbackBelow1024(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root, to give the daemon a network namespace of its own")
		}
		t.Skip("needs root, to give the daemon a network namespace of its own")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) to bring the namespace's loopback up")
	}
	d := startDaemonIn(t, []string{"unshare", "--net", "--", "sh", "-c", `ip link set lo up && exec "$@"`, "sh"})
	for _, p := range []int{22, 443} {
		l := listenIn(t, d.pid, p)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "service on %d\n", p)
				c.Close()
			}
		}()
	}
	cmd := exec.Command(d.bin, "run", "--loopback", "22,443", "--", "python3", "-c", `import socket
for p in (22, 443):
    print(socket.create_connection(("127.0.0.1", p), timeout=10).makefile().readline().strip())`)
	cmd.Env = d.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || string(out) != "service on 22\nservice on 443\n" {
		t.Fatalf("senclaw run --loopback 22,443: %v\nstdout %q\nstderr %s", err, out, stderr.String())
	}
	if strings.Contains(stderr.String(), "permission denied") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
