package bwrap

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/escapetest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestEscapeReads checks what each fs mode lets a sandbox read.
func TestEscapeReads(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		cases := []struct {
			name     string
			mode     backends.FsMode
			readable []string // of "secret", "allowed", "hiddenfile", "public"
			hide     bool
		}{
			{"strict", backends.FsStrict, nil, false},
			{"allowlist", backends.FsAllowlist, []string{"allowed"}, false},
			{"open_hidden", backends.FsOpen, []string{"allowed", "public"}, true},
		}
		for _, tc := range cases {
			t.Run(u.Name+"_"+tc.name, func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				// Outside /tmp (a fresh tmpfs inside), so open mode sees it.
				files := escapetest.ReadFixture(t, filepath.Dir(d.outside))
				spec := newSpec(t, u, d.ws)
				spec.FsMode = tc.mode
				spec.ReadPaths = []string{filepath.Dir(files["allowed"])}
				if tc.hide {
					spec.Hidden = []string{filepath.Dir(files["secret"]), files["hiddenfile"]}
				}
				r := py(t, b, spec, escapetest.Reads(files))
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				escapetest.CheckReads(t, r.stdout, files, tc.readable)
			})
		}
	}
}

// TestEscapeNetworkAndProcesses checks the network and pid namespaces.
func TestEscapeNetworkAndProcesses(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	b := New(Options{})
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { tcp.Close() })
	abstract := fmt.Sprintf("@senclaw-bwrap-test-%d", os.Getpid())
	unixL, err := net.Listen("unix", abstract)
	must(t, err)
	t.Cleanup(func() { unixL.Close() })
	go acceptAll(tcp)
	go acceptAll(unixL)
	host := exec.Command("sleep", "120")
	must(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })

	prog := fmt.Sprintf(`import socket, os
def try_connect(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(addr); return "connected"
    except OSError as e:
        return "refused"
print("tcp", try_connect(socket.AF_INET, ("127.0.0.1", %d)))
print("abstract", try_connect(socket.AF_UNIX, "\0" + %q))
pids = [p for p in os.listdir("/proc") if p.isdigit()]
print("pids", len(pids))
try:
    os.kill(%d, 9); print("kill", "sent")
except OSError as e:
    print("kill", "failed")
`, tcp.Addr().(*net.TCPAddr).Port, abstract[1:], host.Process.Pid)

	for _, u := range sandboxUsers(t) {
		for _, network := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_network_%v", u.Name, network), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				spec := newSpec(t, u, d.ws)
				spec.Network = network
				r := py(t, b, spec, prog)
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				// Network on or off, the sandbox has its own namespace: the
				// way out is the engine's proxy, which this spec does not
				// give, so even this machine's own services are out of reach.
				want := "refused"
				if !strings.Contains(strings.Join(r.proc.Enforcement().Limits, "\n"), "own namespace") {
					t.Errorf("Enforcement.Limits does not report the own namespace: %+v", r.proc.Enforcement())
				}
				for _, line := range []string{"tcp " + want, "abstract " + want, "kill failed"} {
					if !strings.Contains(r.stdout, line) {
						t.Errorf("want %q in:\n%s", line, r.stdout)
					}
				}
				// bwrap's init and python (plus sh if any): never the host's.
				var n int
				fmt.Sscanf(r.stdout[strings.Index(r.stdout, "pids "):], "pids %d", &n)
				if n == 0 || n > 3 {
					t.Errorf("sandbox sees %d processes:\n%s", n, r.stdout)
				}
				if err := host.Process.Signal(syscall.Signal(0)); err != nil {
					t.Errorf("host process died: %v", err)
				}
			})
		}
	}
}

func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// A service's Unix socket under the host's /run (a database, say) is
// reached through the filesystem, whatever the network namespace: open
// mode, which sees the whole disk, must still not reach it.
func TestEscapeOpenModeRunSockets(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("needs to make a socket under /run (root)")
	}
	b := New(Options{})
	sock := fmt.Sprintf("/run/senclaw-bwrap-test-%d.sock", os.Getpid())
	l, err := net.Listen("unix", sock)
	must(t, err)
	t.Cleanup(func() { l.Close(); os.Remove(sock) })
	must(t, os.Chmod(sock, 0o777))
	go acceptAll(l)
	prog := fmt.Sprintf(`import socket, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(3)
try:
    s.connect(%q); print("connected")
except OSError as e:
    print("refused", e.errno)
print("exists" if os.path.exists(%q) else "absent")
`, sock, sock)
	for _, u := range sandboxUsers(t) {
		for _, network := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_network_%v", u.Name, network), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				spec := newSpec(t, u, d.ws)
				spec.FsMode = backends.FsOpen
				spec.Network = network
				r := py(t, b, spec, prog)
				if r.status.Code != 0 || !strings.Contains(r.stdout, "refused") || !strings.Contains(r.stdout, "absent") {
					t.Errorf("the host's /run socket from open mode: %q (exit %+v, stderr %s)", r.stdout, r.status, r.stderr)
				}
			})
		}
	}
}
