package netfwd

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
	"golang.org/x/sys/unix"
)

// otherNetns starts a process in a network namespace of its own (with a
// user namespace when this test is not root) and returns its pid.
func otherNetns(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
	}
	if err := cmd.Start(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no network namespace for the test: %v", err)
		}
		t.Skipf("no network namespace for the test: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// socketIn makes a socket of domain and typ in pid's network namespace
// (root only).
func socketIn(t *testing.T, pid, domain, typ int) int {
	t.Helper()
	fd := -1
	testutil.InNetns(t, pid, func() (err error) {
		fd, err = unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
		return err
	})
	return fd
}

// handOver sends socks over a fresh handoff of ports as the forwarder
// would, and returns Bind's error and the forwarder's answer.
func handOver(t *testing.T, ports []int, sandboxPid int, msg string, socks ...int) (string, error) {
	t.Helper()
	h, err := NewPortsHandoff(ports)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	theirs := int(h.ChildEnd().Fd())
	if err := unix.Sendmsg(theirs, []byte(msg), unix.UnixRights(socks...), nil, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bindErr := h.Bind(ctx, sandboxPid, nil)
	var b [512]byte
	n, _ := unix.Read(theirs, b[:])
	return string(b[:max(n, 0)]), bindErr
}

// TestPortsHandoff: the engine binds a privileged port only on an unbound
// IPv4 TCP socket of the sandbox's own network namespace, and says why
// it refuses anything else.
func TestPortsHandoff(t *testing.T) {
	sandbox := otherNetns(t)
	tcpHere := func() int {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	type handoffCase struct {
		name, msg string
		pid       int
		socks     func() []int
		want      string
	}
	cases := []handoffCase{
		{"the_engines_own_namespace", portsHello, os.Getpid(), func() []int { return []int{tcpHere()} }, "shares the engine's network namespace"},
		{"a_socket_of_this_machine", portsHello, sandbox, func() []int { return []int{tcpHere()} }, "not of the sandbox's network namespace"},
		{"too_few", portsHello, sandbox, func() []int { return nil }, "0 descriptors instead of 1"},
		{"another_message", "hello", sandbox, func() []int { return []int{tcpHere()} }, "unexpected message"},
	}
	if os.Geteuid() == 0 {
		udp := func() []int { return []int{socketIn(t, sandbox, unix.AF_INET, unix.SOCK_DGRAM)} }
		bound := func() []int {
			fd := socketIn(t, sandbox, unix.AF_INET, unix.SOCK_STREAM)
			if err := unix.Bind(fd, &unix.SockaddrInet4{Port: 8080, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
				t.Fatal(err)
			}
			return []int{fd}
		}
		cases = append(cases,
			handoffCase{"udp", portsHello, sandbox, udp, "not an IPv4 TCP socket"},
			handoffCase{"bound_already", portsHello, sandbox, bound, "bound already"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			answer, err := handOver(t, []int{22}, tc.pid, tc.msg, tc.socks()...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Bind: %v, want an error saying %q", err, tc.want)
			}
			if tc.name != "too_few" && tc.name != "another_message" && (answer == "" || answer[0] != portsRefused || !strings.Contains(answer, tc.want)) {
				t.Errorf("the forwarder was told %q", answer)
			}
		})
	}
	if os.Geteuid() != 0 {
		return
	}
	t.Run("the_sandboxs_socket_is_bound", func(t *testing.T) {
		fd := socketIn(t, sandbox, unix.AF_INET, unix.SOCK_STREAM)
		defer unix.Close(fd)
		answer, err := handOver(t, []int{22}, sandbox, portsHello, fd)
		if err != nil || answer != string(portsOK) {
			t.Fatalf("Bind: %v, answer %q", err, answer)
		}
		sa, err := unix.Getsockname(fd)
		if in, ok := sa.(*unix.SockaddrInet4); err != nil || !ok || in.Port != 22 || in.Addr != [4]byte{127, 0, 0, 1} {
			t.Fatalf("bound at %+v (%v)", sa, err)
		}
	})
}
