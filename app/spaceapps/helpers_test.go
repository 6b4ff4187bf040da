package spaceapps

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// fixture is an engine with bwrap and direct, its supervisor, and
// stand-ins for the internet: servers on 127.0.0.1 that the proxy's test
// resolver names (example.test, other.test) and treats as remote, and a
// service of "this machine" (local) that stays this machine's.
type fixture struct {
	root, home string
	e          *app.Engine
	s          *Supervisor
	clock      Clock
	remote     int // example.test and other.test answer here
	local      int // a service of this machine
	attention  *attentionLog
}

type attentionLog struct {
	mu  sync.Mutex
	got []string
}

func (l *attentionLog) add(id, what string) {
	l.mu.Lock()
	l.got = append(l.got, id+": "+what)
	l.mu.Unlock()
}

func (l *attentionLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.got...)
}

type fixtureOpt func(*app.Options, *Options)

func serve(t *testing.T, text string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, text+" "+r.Host)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func newFixture(t *testing.T, opts ...fixtureOpt) *fixture {
	t.Helper()
	testutil.RequireBwrap(t)
	f := &fixture{root: testutil.SandboxDir(t, "sapp-"), attention: &attentionLog{}}
	f.home = filepath.Join(f.root, "home")
	must(t, os.MkdirAll(filepath.Join(f.home, ".ssh"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.home, ".ssh", "id_rsa"), []byte("SECRET-KEY"), 0o644))
	f.remote = serve(t, "remote-ok")
	f.local = serve(t, "local-ok")
	var user *backends.Credential
	if os.Geteuid() == 0 {
		user = &backends.Credential{UID: 65534, GID: 65534}
	}
	names := map[string]bool{"example.test": true, "other.test": true}
	eo := app.Options{
		DataDir: filepath.Join(f.root, "data"), ConfigDir: filepath.Join(f.root, "config"),
		RuntimeDir: filepath.Join(f.root, "run"), HomeDir: f.home,
		Backends:  []backends.Backend{bwrap.New(bwrap.Options{SandboxUser: user}), direct.New()},
		EUID:      os.Geteuid(),
		Forwarder: netfwdtest.Path(t),
		NetResolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if names[host] {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host (test resolver)")
		},
		NetTreatAsRemote: func(ap netip.AddrPort) bool {
			return ap.Addr() == netip.MustParseAddr("127.0.0.1") && int(ap.Port()) == f.remote
		},
	}
	so := Options{OnAttention: f.attention.add}
	for _, o := range opts {
		o(&eo, &so)
	}
	for _, d := range []string{eo.ConfigDir, eo.RuntimeDir} {
		must(t, os.MkdirAll(d, 0o755))
	}
	e, err := app.New(eo)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	so.Engine = e
	s, err := New(so)
	if err != nil {
		t.Fatal(err)
	}
	s.Recover(ctx)
	t.Cleanup(func() {
		s.Close()
		cancel()
		e.Close()
	})
	f.e, f.s, f.clock = e, s, so.Clock
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// probeApp is a test app: a Python server whose routes try what the
// sandbox should allow or refuse, and report what happened.
const probeApp = `import json, os, sys, signal, urllib.request, urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

class H(BaseHTTPRequestHandler):
    def reply(self, text, code=200):
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        u = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        try:
            if u.path == "/health":
                self.reply("ok")
            elif u.path == "/write":
                with open(q["path"], "w") as f:
                    f.write("written by the app")
                self.reply("wrote")
            elif u.path == "/read":
                with open(q["path"]) as f:
                    self.reply("read: " + f.read())
            elif u.path == "/fetch":
                try:
                    with urllib.request.urlopen(q["url"], timeout=10) as r:
                        self.reply("fetched: " + r.read().decode())
                except urllib.error.HTTPError as e:
                    self.reply("http %d: %s" % (e.code, e.read().decode()))
            elif u.path == "/env":
                self.reply(json.dumps(dict(os.environ)))
            elif u.path == "/exit":
                os._exit(int(q.get("code", "1")))
            else:
                self.reply("no such route", 404)
        except Exception as e:
            self.reply("error: %s" % e)

    def log_message(self, *a):
        pass

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("probe app up on", os.environ["PORT"], flush=True)
ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
`

// writeApp makes an app folder with manifest (JSON) and files.
func writeApp(t *testing.T, manifest string, files map[string]string) string {
	t.Helper()
	dir := testutil.SandboxDir(t, "sapp-src-")
	// A folder as people's are: listable by everyone (the engine reads
	// it as the sandbox user).
	must(t, os.Chmod(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644))
	for name, data := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o755))
	}
	return dir
}

// probeManifest is the probe app's manifest with the sandbox block given.
func probeManifest(id, sandbox string) string {
	m := `{"id": "` + id + `", "name": "Probe ` + id + `", "runtime": {"start": "python3 probe.py", "port": 0, "stopTimeoutSec": 5}`
	if sandbox != "" {
		m += `, "sandbox": ` + sandbox
	}
	return m + "}"
}

// get asks the app on port for path and returns the body.
func get(t *testing.T, port int, path string) string {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get("http://127.0.0.1:" + itoa(port) + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}

func itoa(n int) string { return strconv.Itoa(n) }

// register registers dir and fails the test on an error.
func (f *fixture) register(t *testing.T, dir string, inPlace bool) *AppView {
	t.Helper()
	r, err := f.s.Register(context.Background(), RegisterRequest{Dir: dir, InPlace: inPlace})
	if err != nil {
		t.Fatal(err)
	}
	return &r.App
}

// start starts id and waits for it to be healthy.
func (f *fixture) start(t *testing.T, id string) *AppView {
	t.Helper()
	r, err := f.s.Start(context.Background(), id, true)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK {
		lc, _ := f.s.Logs(id, 0)
		t.Fatalf("start of %s: %s (state %s)\nlog:\n%s", id, r.Note, r.App.State, lc.Text)
	}
	return &r.App
}
