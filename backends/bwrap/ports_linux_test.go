package bwrap

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// serveFakeProxy stands in for the engine's proxy on dir/proxy.sock: it
// answers every SOCKS5 connect (the forwarder's relay of a loopback
// port) with the port asked for, so no port of this machine is used.
func serveFakeProxy(t *testing.T, dir string) {
	t.Helper()
	sock := filepath.Join(dir, netfwd.ProxySocket)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	must(t, os.Chmod(sock, 0o777))
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var req [13]byte // greeting (5 1 0) and connect (5 1 0 1 a.b.c.d port)
				if _, err := io.ReadFull(c, req[:]); err != nil {
					return
				}
				c.Write([]byte{5, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
				fmt.Fprintf(c, "service on %d.%d.%d.%d:%d\n", req[7], req[8], req[9], req[10], binary.BigEndian.Uint16(req[11:]))
			}()
		}
	}()
}

// TestPrivilegedLoopbackPorts: loopback rules for ports below 1024 (a
// local SSH on 22, HTTPS on 443) open inside the sandbox like any other,
// without giving the sandbox any capability: its command still cannot
// bind a privileged port of its own.
func TestPrivilegedLoopbackPorts(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	fwd := netfwdtest.Path(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			netDir := filepath.Join(d.base, "net")
			must(t, os.Mkdir(netDir, 0o777))
			must(t, os.Chmod(netDir, 0o777))
			serveFakeProxy(t, netDir)
			spec := newSpec(t, u, d.ws)
			spec.Net = &backends.NetPlumbing{Dir: netDir, Forwarder: fwd, Loopback: []int{22, 443, 5432}}
			r := py(t, b, spec, `import socket
for p in (22, 443, 5432):
    c = socket.create_connection(("127.0.0.1", p), timeout=10)
    print(c.makefile().readline().strip())
try:
    socket.socket().bind(("127.0.0.1", 80))
    print("bound 80")
except OSError as e:
    print("bind 80:", e.errno)
print([l.split()[1] for l in open("/proc/self/status") if l.startswith(("CapEff", "CapPrm", "CapAmb"))])`)
			want := "service on 127.0.0.1:22\nservice on 127.0.0.1:443\nservice on 127.0.0.1:5432\nbind 80: 13\n['0000000000000000', '0000000000000000', '0000000000000000']\n"
			if r.err != nil || r.status.Code != 0 || r.stdout != want {
				t.Fatalf("got %q, want %q\nstatus %+v err %v\nstderr %s", r.stdout, want, r.status, r.err, r.stderr)
			}
			if strings.Contains(r.stderr, "senclaw-netfwd") {
				t.Errorf("the forwarder complained: %s", r.stderr)
			}
		})
	}
}
