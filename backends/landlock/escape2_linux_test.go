package landlock

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
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// fakeProxy stands in for the engine's proxy: it answers each connection
// on its sandbox's proxy socket with "proxy".
func fakeProxy(t *testing.T, u sandboxUser) *backends.NetPlumbing {
	t.Helper()
	dir, err := os.MkdirTemp("", "senclaw-landlock-net-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	l, err := net.Listen("unix", filepath.Join(dir, netfwd.ProxySocket))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, "proxy")
			c.Close()
		}
	}()
	must(t, os.WriteFile(filepath.Join(dir, netfwd.NodePreload), []byte("// preload\n"), 0o644))
	return &backends.NetPlumbing{Dir: dir}
}

// TestEscapeNetworkAndProcesses: with the network off no socket at all;
// with it on, TCP only to the run's door to the proxy, never to a
// loopback listener no rule names (the engine's API port stands for
// them), nor UDP, raw, packet or Unix sockets; and never the host's
// processes: no signal, no ptrace, no environ, no mem.
func TestEscapeNetworkAndProcesses(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	if abi, _ := ABIVersion(); abi < 6 {
		t.Skipf("scoped signals need Landlock ABI 6, this kernel has %d", abi)
	}
	b := New(Options{})
	api, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { api.Close() })
	go acceptAll(api)
	abstract := fmt.Sprintf("@senclaw-landlock-test-%d", os.Getpid())
	unixL, err := net.Listen("unix", abstract)
	must(t, err)
	t.Cleanup(func() { unixL.Close() })
	go acceptAll(unixL)
	pathSock := filepath.Join(t.TempDir(), "service.sock")
	pathL, err := net.Listen("unix", pathSock)
	must(t, err)
	t.Cleanup(func() { pathL.Close() })
	must(t, os.Chmod(filepath.Dir(pathSock), 0o755))
	must(t, os.Chmod(pathSock, 0o777))
	go acceptAll(pathL)
	host := exec.Command("sleep", "120")
	host.Env = []string{"SENCLAW_HOST_SECRET=hunter2"}
	must(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	if os.Geteuid() == 0 {
		// As the sandbox user itself, so that only Landlock stands between.
		_ = host.Process.Kill()
		_ = host.Wait()
		host = exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "120")
		host.Env = []string{"SENCLAW_HOST_SECRET=hunter2"}
		must(t, host.Start())
	}
	prog := fmt.Sprintf(`import socket, os, ctypes, sys
def attempt(what, fn):
    try:
        r = fn(); print(what, "ok", r if r else "")
    except OSError as e:
        print(what, "refused", e.errno)
def tcp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(3)
    s.connect(("127.0.0.1", port)); return s.recv(16).decode()
def unix(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3); s.connect(addr)
attempt("api", lambda: tcp(%d))
attempt("door", lambda: tcp(int(os.environ.get("SENCLAW_PROXY_PORT", "1"))))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 53)))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("packet", lambda: socket.socket(17, socket.SOCK_RAW, 0))
attempt("abstract", lambda: unix("\0" + %q))
attempt("pathname", lambda: unix(%q))
attempt("socketpair", lambda: socket.socketpair() and None)
attempt("bind_any", lambda: socket.socket().bind(("0.0.0.0", 0)))
attempt("kill", lambda: os.kill(%[4]d, 9))
attempt("environ", lambda: open("/proc/%[4]d/environ").read())
attempt("mem", lambda: open("/proc/%[4]d/mem", "rb").read(1))
attempt("fd", lambda: os.readlink("/proc/%[4]d/fd/0"))
attempt("fd_open", lambda: open("/proc/%[4]d/fd/0").read(1))
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, %[4]d, 0, 0)
print("ptrace", "ok" if r == 0 else "refused", ctypes.get_errno())
import resource
attempt("prlimit_cpu", lambda: resource.prlimit(%[4]d, resource.RLIMIT_CPU, (1, 1)))
attempt("prlimit_nofile", lambda: resource.prlimit(%[4]d, resource.RLIMIT_NOFILE, (3, 3)))
attempt("renice", lambda: os.setpriority(os.PRIO_PROCESS, %[4]d, 19))
attempt("sched_idle", lambda: os.sched_setscheduler(%[4]d, os.SCHED_IDLE, os.sched_param(0)))
attempt("own_nice", lambda: os.setpriority(os.PRIO_PROCESS, 0, 1))
attempt("own_limit", lambda: resource.prlimit(0, resource.RLIMIT_CORE, (0, 0)))
`, api.Addr().(*net.TCPAddr).Port, abstract[1:], pathSock, host.Process.Pid)
	for _, u := range sandboxUsers(t) {
		for _, network := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_network_%v", u.Name, network), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				spec := newSpec(t, u, d.ws)
				want := map[string]string{"api": "refused", "door": "refused", "udp": "refused", "raw": "refused",
					"packet": "refused", "abstract": "refused", "pathname": "refused", "socketpair": "ok",
					"bind_any": "refused", "kill": "refused", "environ": "refused", "mem": "refused",
					"fd": "refused", "fd_open": "refused", "ptrace": "refused",
					"prlimit_cpu": "refused", "prlimit_nofile": "refused", "renice": "refused",
					"sched_idle": "refused", "own_nice": "ok", "own_limit": "ok"}
				if network {
					spec.Network = true
					spec.Net = fakeProxy(t, u)
					spec.Env = append(spec.Env, "SENCLAW_PROXY_PORT=3128")
					want["door"] = "ok proxy"
				}
				r := py(t, b, spec, prog)
				if r.status.Code != 0 {
					t.Fatalf("exit %+v: %s", r.status, r.stderr)
				}
				got := map[string]string{}
				for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					k, v, _ := strings.Cut(line, " ")
					got[k] = v
				}
				for k, v := range want {
					if !strings.HasPrefix(got[k], v) {
						t.Errorf("%s: %q, want %q", k, got[k], v)
					}
				}
				if err := host.Process.Signal(syscall.Signal(0)); err != nil {
					t.Errorf("host process died: %v", err)
				}
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", host.Process.Pid)); strings.Contains(string(b), "Max cpu time              1 ") {
					t.Errorf("the sandbox set the host process's limits:\n%s", b)
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

// TestProxyEnv: the runner's proxy variables point at the run's door.
func TestProxyEnv(t *testing.T) {
	t.Parallel()
	env := []string{"HTTP_PROXY=http://127.0.0.1:3128", "all_proxy=socks5h://127.0.0.1:1080", "NO_PROXY=localhost,127.0.0.1,::1",
		"SENCLAW_PROXY_PORT=3128", "NODE_OPTIONS=--require /w/.trace/node-hook.cjs --require /run/senclaw/node-proxy.cjs", "KEEP=http://127.0.0.1:3128x",
		"SSL_CERT_FILE=/run/senclaw/ca-bundle.pem"}
	got := proxyEnv(env, 40000, "/data/net/s/node-proxy.cjs", "/data/net/s/ca-bundle.pem")
	want := []string{"HTTP_PROXY=http://127.0.0.1:40000", "all_proxy=socks5h://127.0.0.1:40000",
		"SENCLAW_PROXY_PORT=40000", "NODE_OPTIONS=--require /w/.trace/node-hook.cjs --require /data/net/s/node-proxy.cjs", "KEEP=http://127.0.0.1:3128x",
		"SSL_CERT_FILE=/data/net/s/ca-bundle.pem"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("proxyEnv:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTheDoorIsOneAddress: Landlock's TCP rules name a port, so code that
// ignores the proxy could reach the door's port number on another host.
// The engine answers the run's connect, bind and listen itself: the door's
// port at any other address (127.0.0.2, ::1 stand for another host here;
// nothing listens there, so without the guard the kernel would answer
// ECONNREFUSED, with it the engine answers EACCES), a listen port on every
// address, and a listen() that would open a random port are refused; the
// door itself, by IPv4 or IPv4-mapped IPv6, blocking or not, and a listen
// port on loopback work.
func TestTheDoorIsOneAddress(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	if ok, why := unixguard.Available(); !ok {
		t.Skipf("the connect guard cannot run here: %s", why)
	}
	b := New(Options{})
	program := func(listen int) string {
		return fmt.Sprintf(`import socket, os, errno
door = int(os.environ["SENCLAW_PROXY_PORT"])
def attempt(what, fn):
    try:
        r = fn(); print(what, "ok", r if r else "")
    except OSError as e:
        print(what, "refused", errno.errorcode.get(e.errno, e.errno))
def tcp(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(3)
    s.connect((host, port)); return s.recv(16).decode()
def nonblocking():
    s = socket.socket(); s.setblocking(False)
    try:
        s.connect(("127.0.0.1", door))
    except BlockingIOError:
        pass
    s.setblocking(True); s.settimeout(3); return s.recv(16).decode()
def unspec():
    import ctypes
    s = socket.socket(); s.connect(("127.0.0.1", door))
    libc = ctypes.CDLL(None, use_errno=True)
    sa = (ctypes.c_ubyte * 16)()
    if libc.connect(s.fileno(), sa, 16) != 0:
        raise OSError(ctypes.get_errno(), "connect AF_UNSPEC")
def bound_listen(host, family=socket.AF_INET):
    s = socket.socket(family); s.bind((host, %d)); s.listen(1); s.close()
attempt("door", lambda: tcp("127.0.0.1", door))
attempt("door_mapped", lambda: tcp("::ffff:127.0.0.1", door, socket.AF_INET6))
attempt("door_nonblocking", nonblocking)
attempt("door_unspec", unspec)
attempt("door_port_elsewhere", lambda: tcp("127.0.0.2", door))
attempt("door_port_v6", lambda: tcp("::1", door, socket.AF_INET6))
attempt("other_port", lambda: tcp("127.0.0.1", door + 1))
attempt("listen_loopback", lambda: bound_listen("127.0.0.1"))
attempt("listen_every_address", lambda: bound_listen("0.0.0.0"))
attempt("listen_every_v6", lambda: bound_listen("::", socket.AF_INET6))
attempt("listen_unbound", lambda: socket.socket().listen(1))
attempt("bind_other_port", lambda: socket.socket().bind(("127.0.0.1", %d)))
`, listen, freePort(t))
	}
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			spec := newSpec(t, u, d.ws)
			spec.Network = true
			listen := freePort(t)
			spec.Net = fakeProxy(t, u)
			spec.Net.Listen = []int{listen}
			spec.Env = append(spec.Env, "SENCLAW_PROXY_PORT=3128")
			r := py(t, b, spec, program(listen))
			if r.status.Code != 0 {
				t.Fatalf("exit %+v: %s", r.status, r.stderr)
			}
			want := map[string]string{
				"door": "ok proxy", "door_mapped": "ok proxy", "door_nonblocking": "ok proxy", "door_unspec": "ok",
				"door_port_elsewhere": "refused EACCES", "door_port_v6": "refused EACCES", "other_port": "refused EACCES",
				"listen_loopback": "ok", "listen_every_address": "refused EACCES", "listen_every_v6": "refused EACCES",
				"listen_unbound": "refused EACCES", "bind_other_port": "refused EACCES",
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				k, v, _ := strings.Cut(line, " ")
				got[k] = strings.TrimSpace(v)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
			if enf := strings.Join(r.proc.Enforcement().Limits, "; "); !strings.Contains(enf, "not that port on another host") {
				t.Errorf("the record does not say the door is one address: %s", enf)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
