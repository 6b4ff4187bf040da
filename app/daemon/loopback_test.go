package daemon

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// listenIn listens on 127.0.0.1:port in the network namespace of pid.
func listenIn(t *testing.T, pid, port int) net.Listener {
	t.Helper()
	var l net.Listener
	testutil.InNetns(t, pid, func() (err error) {
		l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		return err
	})
	t.Cleanup(func() { l.Close() })
	return l
}

// TestLoopbackBelow1024 runs senclaw run --loopback 22,443 against a
// daemon in a network namespace of the test's own, where a stand-in SSH
// (22) and HTTPS (443) service listen on 127.0.0.1: the sandbox reaches
// both at their own ports. No port of this machine is touched.
func TestLoopbackBelow1024(t *testing.T) {
	t.Parallel()
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
