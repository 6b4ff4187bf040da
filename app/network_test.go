package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/backends/unixguard"
	"github.com/senclaw/sandbox/internal/testutil"
)

// netFixture stands in for the internet with servers on 127.0.0.1: the
// engine's proxy resolves the test names to them and treats exactly the
// "remote" servers' addresses as remote. Every other loopback address
// (local, the API stand-in) stays this machine's, as in production.
type netFixture struct {
	e                     *Engine
	remote, remote2       int
	local, api, localOnly int
}

func serveText(t *testing.T, h http.Handler) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func text(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, s+" "+r.URL.Path) })
}

// gitRepo makes a bare repository with one commit and serves it with git
// http-backend (CGI) under /git/.
func gitRepo(t *testing.T, mux *http.ServeMux) {
	t.Helper()
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		return
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "hello from git"},
		{"clone", "-q", "--bare", work, filepath.Join(root, "repo.git")},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	mux.Handle("/git/", &cgi.Handler{Path: backend, Root: "/git", Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
}

func newNetFixture(t *testing.T) *netFixture {
	t.Helper()
	f := &netFixture{}
	mux := http.NewServeMux()
	mux.Handle("/", text("remote-ok"))
	gitRepo(t, mux)
	f.remote = serveText(t, mux)
	f.remote2 = serveText(t, text("remote2-ok"))
	f.local = serveText(t, text("local-ok"))
	f.api = serveText(t, text("api-secret"))
	f.localOnly = serveText(t, text("local-only"))
	names := map[string]bool{"example.test": true, "other.test": true, "rebind.test": true, "git.test": true}
	remote := func(ap netip.AddrPort) bool {
		return ap.Addr() == netip.MustParseAddr("127.0.0.1") && (int(ap.Port()) == f.remote || int(ap.Port()) == f.remote2)
	}
	f.e = bwrapEngine(t, func(o *Options) {
		o.NetResolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			if names[host] {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host (test resolver)")
		}
		o.NetTreatAsRemote = remote
	})
	return f
}

// sh runs script in sandbox id and returns its stdout.
func (f *netFixture) sh(t *testing.T, id, script string) string {
	t.Helper()
	res, err := f.e.Exec(context.Background(), id, RunRequest{Argv: []string{"/bin/sh", "-c", script}, TimeoutMs: 60000})
	if err != nil {
		t.Fatalf("run refused: %v", err)
	}
	if res.Record.ExitCode == nil {
		t.Fatalf("run %+v\nstderr %s", res.Record, res.Stderr)
	}
	return res.Stdout
}

func (f *netFixture) create(t *testing.T, cfg SandboxConfig) *Sandbox {
	t.Helper()
	sb, err := f.e.Create(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !slices.Contains(strings.Split(out, "\n"), l) {
			t.Errorf("want line %q in:\n%s", l, out)
		}
	}
}

// curl prints "BODY CODE" on one line; via forces the proxy even for
// addresses in NO_PROXY.
func curl(url string, via bool) string {
	pre := ""
	if via {
		pre = "env -u NO_PROXY -u no_proxy "
	}
	return pre + "curl -s -m 10 -w ' %{http_code}\\n' " + url + " | tr -s '\\n' ' '; echo"
}

func TestNetworkRulesHoldUnderBwrap(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (apt-get install -y curl)")
	}
	f := newNetFixture(t)
	ex := func(port int, path string) string { return fmt.Sprintf("http://example.test:%d%s", port, path) }

	t.Run("network_off_reaches_nothing", func(t *testing.T) {
		t.Parallel()
		sb := f.create(t, SandboxConfig{Backend: ptr("bwrap")})
		out := f.sh(t, sb.ID, `test -e /run/senclaw && echo plumbing-there; env | grep -i _proxy; `+
			curl(fmt.Sprintf("-x http://127.0.0.1:3128 %s", ex(f.remote, "/")), false)+
			curl(fmt.Sprintf("http://127.0.0.1:%d/", f.local), false))
		if strings.Contains(out, "plumbing") || strings.Contains(out, "ok") || strings.Contains(strings.ToLower(out), "proxy=") {
			t.Errorf("network off reached something:\n%s", out)
		}
	})

	t.Run("network_on_reaches_remote_only", func(t *testing.T) {
		t.Parallel()
		sb := f.create(t, SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true)})
		script := strings.Join([]string{
			curl(ex(f.remote, "/curl"), false),
			curl("-p "+ex(f.remote, "/tunnel"), false), // CONNECT
			curl("--socks5-hostname 127.0.0.1:1080 "+ex(f.remote, "/socks"), false),
			curl(fmt.Sprintf("http://127.0.0.1:%d/", f.local), true),
			curl(fmt.Sprintf("http://rebind.test:%d/", f.local), false),
			curl(fmt.Sprintf("http://127.0.0.1:%d/", f.local), false), // direct: nothing there
			`python3 -c "import socket; socket.getaddrinfo('example.test', 80)" 2>/dev/null && echo dns-works || echo dns-fails`,
			fmt.Sprintf(`python3 -c "import urllib.request; print(urllib.request.urlopen('%s').read().decode())"`, ex(f.remote, "/urllib")),
			fmt.Sprintf(`node -e "fetch('%s').then(r=>r.text()).then(console.log, e=>console.log('fetch failed', e.cause||e))"`, ex(f.remote, "/fetch")),
			fmt.Sprintf(`node -e "require('http').get('%s', r=>{let b='';r.on('data',d=>b+=d);r.on('end',()=>console.log(b))}).on('error',e=>console.log('http failed',e))"`, ex(f.remote, "/nodehttp")),
		}, "\n")
		out := f.sh(t, sb.ID, script)
		wantLines(t, out,
			"remote-ok /curl 200 ", "remote-ok /tunnel 200 ", "remote-ok /socks 200 ",
			"dns-fails", "remote-ok /urllib", "remote-ok /fetch", "remote-ok /nodehttp", " 000 ")
		if strings.Contains(out, "local-ok") || !strings.Contains(out, "403") {
			t.Errorf("this machine's service was reached, or not refused with 403:\n%s", out)
		}
		if _, err := os.Stat("/usr/lib/git-core/git-http-backend"); err == nil {
			out := f.sh(t, sb.ID, fmt.Sprintf("git clone -q http://git.test:%d/git/repo.git r && git -C r log --format=%%s", f.remote))
			wantLines(t, out, "hello from git")
		}
		st, err := f.e.Stats(context.Background(), sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Denied < 2 || !slices.Contains(st.RecentDenied, "127.0.0.1") || !slices.Contains(st.RecentDenied, "rebind.test") {
			t.Errorf("denials %d %v", st.Denied, st.RecentDenied)
		}
	})

	t.Run("connect_ports_only", func(t *testing.T) {
		t.Parallel()
		sb := f.create(t, SandboxConfig{Backend: ptr("bwrap"), Connect: []int{f.remote}})
		out := f.sh(t, sb.ID, curl(ex(f.remote, "/a"), false)+curl(fmt.Sprintf("http://other.test:%d/b", f.remote2), false))
		wantLines(t, out, "remote-ok /a 200 ")
		if strings.Contains(out, "remote2-ok") {
			t.Errorf("a port outside connect was reached:\n%s", out)
		}
	})

	t.Run("loopback_ports_only_and_never_the_api", func(t *testing.T) {
		t.Parallel()
		sb := f.create(t, SandboxConfig{Backend: ptr("bwrap"), Loopback: []int{f.local, f.api}})
		f.e.ProtectPort(f.api) // the API came up after the rule was saved
		out := f.sh(t, sb.ID, strings.Join([]string{
			curl(fmt.Sprintf("http://127.0.0.1:%d/direct", f.local), false),
			curl(fmt.Sprintf("http://localhost:%d/proxied", f.local), true),
			curl(fmt.Sprintf("http://127.0.0.1:%d/", f.api), false),
			curl(fmt.Sprintf("http://127.0.0.1:%d/", f.api), true),
			curl(fmt.Sprintf("http://127.0.0.1:%d/", f.localOnly), true),
			curl(ex(f.remote, "/"), false),
		}, "\n"))
		wantLines(t, out, "local-ok /direct 200 ", "local-ok /proxied 200 ")
		for _, bad := range []string{"api-secret", "local-only", "remote-ok"} {
			if strings.Contains(out, bad) {
				t.Errorf("reached %s:\n%s", bad, out)
			}
		}
		if _, err := f.e.SetPorts(context.Background(), sb.ID, nil, nil, []int{f.api}); err == nil || !strings.Contains(err.Error(), "loopbackPorts") {
			t.Errorf("listing the API port: %v", err)
		}
	})

	t.Run("domain_allowlist_applies_live", func(t *testing.T) {
		t.Parallel()
		sb := f.create(t, SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true), Domains: []string{"example.test"}})
		ws := sb.Workspace
		go func() {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(ws, "ready")); err == nil {
					break
				}
			}
			if _, err := f.e.SetPortRules(context.Background(), sb.ID, sbPorts(sb, []string{"other.test"})); err != nil {
				t.Error(err)
			}
			os.WriteFile(filepath.Join(ws, "go"), nil, 0o644)
		}()
		out := f.sh(t, sb.ID, strings.Join([]string{
			curl(ex(f.remote, "/1"), false),
			curl(fmt.Sprintf("http://other.test:%d/1", f.remote2), false),
			curl(fmt.Sprintf("http://127.0.0.1:%d/", f.remote), true), // a literal, with an allowlist
			"touch ready; while [ ! -e go ]; do sleep 0.05; done",
			curl(ex(f.remote, "/2"), false),
			curl(fmt.Sprintf("http://other.test:%d/2", f.remote2), false),
		}, "\n"))
		wantLines(t, out, "remote-ok /1 200 ", "remote2-ok /2 200 ")
		if strings.Contains(out, "remote2-ok /1") || strings.Contains(out, "remote-ok /2") || strings.Contains(out, "remote-ok / ") {
			t.Errorf("the allowlist did not hold, or its edit did not apply live:\n%s", out)
		}
	})

	t.Run("listen_port_reachable_from_the_host", func(t *testing.T) {
		t.Parallel()
		port := testutil.FreePort(t)
		sb := f.create(t, SandboxConfig{Backend: ptr("bwrap"), Listen: []int{port}})
		res, err := f.e.Exec(context.Background(), sb.ID, RunRequest{Argv: []string{"python3", "-m", "http.server", fmt.Sprint(port), "--bind", "127.0.0.1"}, Background: true})
		if err != nil {
			t.Fatal(err)
		}
		defer f.e.Kill(context.Background(), sb.ID, 0)
		var got string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !strings.Contains(got, "Directory listing"); time.Sleep(100 * time.Millisecond) {
			if r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port)); err == nil {
				b, _ := io.ReadAll(r.Body)
				r.Body.Close()
				got = string(b)
			}
		}
		if !strings.Contains(got, "Directory listing") {
			t.Fatalf("the listen port did not answer on the host (run %+v): %q", res.Record, got)
		}
		// Only on 127.0.0.1: nothing listens on the machine's other addresses.
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("[::1]:%d", port), time.Second); err == nil {
			c.Close()
			t.Error("the listen port answers on ::1 too")
		}
	})

	t.Run("listen_port_in_use_is_a_clear_refusal", func(t *testing.T) {
		t.Parallel()
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		port := busy.Addr().(*net.TCPAddr).Port
		sb := f.create(t, SandboxConfig{Backend: ptr("bwrap"), Listen: []int{port}})
		_, err = f.e.Exec(context.Background(), sb.ID, RunRequest{Command: "true"})
		if err == nil || !strings.Contains(err.Error(), "already in use") {
			t.Errorf("want a refusal naming the busy port, got %v", err)
		}
	})
}

func sbPorts(sb *Sandbox, domains []string) (r backends.PortRules) {
	r = sb.Ports
	r.Domains = domains
	return r
}

// TestNoForwarderRefusesBwrapRuns: the forwarder loads the Unix socket
// guard of every bwrap run, so without it every bwrap run is refused and
// says how to build it (where the kernel has no guard to load, runs with
// the network off go on).
func TestNoForwarderRefusesBwrapRuns(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t, func(o *Options) { o.Forwarder = "" })
	_ = netfwdtest.Path // the other engines get the forwarder from newTestEngine
	guarded, _ := unixguard.Available()
	res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Command: "echo off"})
	switch {
	case guarded && (err == nil || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), "Unix socket guard")):
		t.Errorf("network off: want a refusal saying the guard needs the forwarder and how to build it, got %v", err)
	case !guarded && (err != nil || res.Stdout != "off\n"):
		t.Errorf("network off, no guard on this kernel: %v %+v", err, res)
	}
	for _, cfg := range []SandboxConfig{{Network: ptr(true)}, {Loopback: []int{5432}}, {Listen: []int{8123}}} {
		_, err := e.RunOnce(context.Background(), cfg, RunRequest{Command: "echo on"})
		if err == nil || !strings.Contains(err.Error(), "make build") {
			t.Errorf("%+v: want a refusal saying how to build the forwarder, got %v", cfg, err)
		}
	}
}
