package landlock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUnixSocketPairsReachNoName: a Landlock run may make no Unix socket
// but a pair's, and a datagram socket sends to whatever address each
// datagram names: a host program's named socket (/dev/log, journald's,
// here one in /var/tmp that the sandbox user may write), which Landlock
// never scopes, or an abstract one, which it scopes only from ABI 6 on.
// So datagram pairs (SOCK_RAW ones too) are refused, a stream or seqpacket pair sends to its
// peer only, and no pair's socket may be bound to an abstract
// name, which would take it in this machine's network namespace (a host
// program binding it later finds it taken, its clients reach the
// sandbox). With the network on and off.
func TestUnixSocketPairsReachNoName(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	b := New(Options{})
	dir, err := os.MkdirTemp("/var/tmp", "senclaw-landlock-unix-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	named := filepath.Join(dir, "log.sock")
	abstract := fmt.Sprintf("@senclaw-landlock-dgram-%d", os.Getpid())
	var got []string
	received := make(chan string, 16)
	for _, name := range []string{named, abstract} {
		l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		must(t, err)
		t.Cleanup(func() { l.Close() })
		go func() {
			buf := make([]byte, 64)
			for {
				n, _, err := l.ReadFromUnix(buf)
				if err != nil {
					return
				}
				received <- string(buf[:n])
			}
		}()
	}
	must(t, os.Chmod(named, 0o777))
	prog := func(squat string) string {
		return fmt.Sprintf(`import socket, errno
def attempt(what, fn):
    try:
        r = fn(); print(what, "ok", r if r else "")
    except OSError as e:
        print(what, "refused", errno.errorcode.get(e.errno, e.errno))
def pair(kind):
    return socket.socketpair(socket.AF_UNIX, kind)
attempt("dgram_pair", lambda: pair(socket.SOCK_DGRAM) and None)
attempt("dgram_pair_cloexec", lambda: pair(socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) and None)
attempt("raw_pair", lambda: pair(socket.SOCK_RAW) and None)
def dgram_to(addr):
    a, _ = pair(socket.SOCK_DGRAM); return a.sendto(b"from-dgram", addr)
attempt("dgram_to_named", lambda: dgram_to(%[1]q))
attempt("dgram_to_abstract", lambda: dgram_to("\0" + %[2]q))
s, _ = pair(socket.SOCK_STREAM)
q, _ = pair(socket.SOCK_SEQPACKET)
for name, sock in [("stream", s), ("seqpacket", q)]:
    attempt(name + "_to_named", lambda: sock.sendto(b"from-" + name.encode(), %[1]q))
    attempt(name + "_to_abstract", lambda: sock.sendto(b"from-" + name.encode(), "\0" + %[2]q))
attempt("bind_abstract", lambda: s.bind("\0" + %[3]q))
attempt("bind_seqpacket_abstract", lambda: q.bind("\0" + %[3]q + "-q"))
`, named, abstract[1:], squat)
	}
	for _, u := range sandboxUsers(t) {
		for _, network := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_network_%v", u.Name, network), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				spec := newSpec(t, u, d.ws)
				if network {
					spec.Network = true
					spec.Net = fakeProxy(t, u)
				}
				squat := fmt.Sprintf("senclaw-landlock-squat-%d-%s-%v", os.Getpid(), u.Name, network)
				r := py(t, b, spec, prog(squat))
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				res := map[string]string{}
				for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					k, v, _ := strings.Cut(line, " ")
					res[k] = strings.TrimSpace(v)
				}
				// A seqpacket pair sends to its peer whatever address a
				// send names: that it reaches no host socket is checked
				// at the end, with the rest.
				for _, k := range []string{"dgram_pair", "dgram_pair_cloexec", "raw_pair", "dgram_to_named", "dgram_to_abstract", "bind_abstract", "bind_seqpacket_abstract",
					"stream_to_named", "stream_to_abstract"} {
					if !strings.HasPrefix(res[k], "refused") {
						t.Errorf("%s: %q, want refused", k, res[k])
					}
				}
			})
		}
	}
	t.Cleanup(func() {
		// Whatever arrived by then: the runs are over when the cleanups run.
		time.Sleep(50 * time.Millisecond)
		for len(received) > 0 {
			got = append(got, <-received)
		}
		if len(got) > 0 {
			t.Errorf("host sockets received datagrams from sandboxes: %q", got)
		}
	})
}
