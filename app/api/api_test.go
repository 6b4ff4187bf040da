package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/internal/testutil"
)

const testToken = "0123456789abcdef0123456789abcdef"

// testDir is a directory a sandbox user can traverse.
func testDir(t *testing.T) string { return testutil.SandboxDir(t, "senclaw-api-") }

func testEngine(t *testing.T, bs ...backends.Backend) *app.Engine {
	t.Helper()
	if len(bs) == 0 {
		bs = []backends.Backend{direct.New()}
	}
	root := testDir(t)
	e, err := app.New(app.Options{DataDir: filepath.Join(root, "data"), ConfigDir: filepath.Join(root, "config"), RuntimeDir: filepath.Join(root, "run"), HomeDir: filepath.Join(root, "home"), Backends: bs, EUID: os.Geteuid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := e.Settings()
	s.AllowDirect = true
	s.DefaultTimeoutMs = 20000
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	return e
}

// tcpServer serves s over loopback TCP the way the daemon does, with the
// Host and Origin checks of a TCP listener.
func tcpServer(t *testing.T, s *Server) (*httptest.Server, string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(s)
	ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return WithTransport(ctx, "tcp", allowedHosts(c.LocalAddr()))
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, ts.URL
}

type call struct {
	method, path string
	body         any
	headers      map[string]string
}

func do(t *testing.T, base string, c call) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if c.body != nil {
		if s, ok := c.body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			data, _ := json.Marshal(c.body)
			rd = bytes.NewReader(data)
		}
	}
	req, _ := http.NewRequest(c.method, base+c.path, rd)
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range c.headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
		if k == "Host" {
			req.Host = v
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data := checkedBody(t, resp)
	_ = json.Unmarshal(data, &out)
	if out == nil {
		out = map[string]any{"_raw": string(data)}
	}
	return resp.StatusCode, out
}

func TestAuthOverTCP(t *testing.T) {
	t.Parallel()
	_, base := tcpServer(t, New(Options{Engine: testEngine(t), Token: testToken}))
	cases := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"good_token", nil, 200},
		{"no_token", map[string]string{"Authorization": ""}, 401},
		{"wrong_token", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"basic_auth", map[string]string{"Authorization": "Basic " + testToken}, 401},
		{"rebinding_host", map[string]string{"Host": "evil.example:80"}, 403},
		{"other_port_host", map[string]string{"Host": "127.0.0.1:1"}, 403},
		{"cross_site_origin", map[string]string{"Origin": "http://evil.example"}, 403},
		{"null_origin", map[string]string{"Origin": "null"}, 403},
		{"same_origin", map[string]string{"Origin": base}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body := do(t, base, call{method: "GET", path: "/api/sandbox/settings", headers: tc.headers})
			if status != tc.want {
				t.Fatalf("status %d, want %d: %v", status, tc.want, body)
			}
			if tc.want != 200 && body["error"] == "" {
				t.Fatalf("no error message: %v", body)
			}
		})
	}
}

// TestHealthNeedsNoToken: GET /health over TCP answers without a token,
// up or down and nothing more (not why: that names the data dir), and
// still only to this server's Host. Before, /health was the dashboard's
// page and the README's health check needed /api/sandbox/health and the
// token.
func TestHealthNeedsNoToken(t *testing.T) {
	t.Parallel()
	_, up := tcpServer(t, New(Options{Engine: testEngine(t), Token: testToken}))
	_, down := tcpServer(t, New(Options{EngineErr: errors.New("store damaged: /home/me/secret"), Token: testToken}))
	noToken := map[string]string{"Authorization": ""}
	if status, body := do(t, up, call{method: "GET", path: "/health", headers: noToken}); status != 200 || len(body) != 1 || body["ok"] != true {
		t.Errorf("GET /health without a token: %d %v", status, body)
	}
	if status, body := do(t, down, call{method: "GET", path: "/health", headers: noToken}); status != 503 || len(body) != 1 || body["ok"] != false {
		t.Errorf("GET /health of an engine that could not start: %d %v", status, body)
	}
	if status, _ := do(t, up, call{method: "GET", path: "/health", headers: map[string]string{"Authorization": "", "Host": "evil.example:80"}}); status != 403 {
		t.Errorf("GET /health with a foreign Host: %d, want 403", status)
	}
	if status, _ := do(t, up, call{method: "GET", path: "/api/sandbox/health", headers: noToken}); status != 401 {
		t.Errorf("GET /api/sandbox/health without a token: %d, want 401", status)
	}
}

// A connection that no listener marked is refused: only the daemon's own
// listeners and the desktop window reach the API.
func TestUnmarkedConnectionsAreRefused(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(New(Options{Engine: testEngine(t), Token: testToken}))
	defer ts.Close()
	if status, _ := do(t, ts.URL, call{method: "GET", path: "/api/sandbox/health"}); status != 403 {
		t.Fatalf("status %d", status)
	}
}

func TestEngineUnavailableAnswers503Everywhere(t *testing.T) {
	t.Parallel()
	stopped := make(chan struct{})
	s := New(Options{EngineErr: errors.New("store damaged: disk on fire"), Token: testToken, OnStop: func() { close(stopped) }})
	_, base := tcpServer(t, s)
	for _, route := range s.table {
		method, path, _ := strings.Cut(route, " ")
		path = strings.ReplaceAll(path, "{id}", "x")
		if engineless[method+" "+strings.TrimPrefix(path, "/api/sandbox")] {
			continue
		}
		status, body := do(t, base, call{method: method, path: path, body: map[string]any{}})
		if status != 503 || !strings.Contains(body["error"].(string), "disk on fire") {
			t.Errorf("%s: %d %v", route, status, body)
		}
	}
	// A damaged store: health says why, and the daemon can still be stopped.
	status, body := do(t, base, call{method: "GET", path: "/api/sandbox/health"})
	if status != 503 || body["ok"] != false || body["error"] != "store damaged: disk on fire" {
		t.Errorf("health: %d %v", status, body)
	}
	if status, body := do(t, base, call{method: "POST", path: "/api/sandbox/daemon/stop"}); status != 200 {
		t.Errorf("daemon/stop: %d %v", status, body)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Error("daemon/stop did not stop a daemon whose engine is unavailable")
	}
}

func TestRoutesMatchTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	// The routes outside the table: the document itself, the public
	// health, the dashboard's login and page, and MCP (mounted by the
	// daemon).
	served := append([]string{"GET /api/sandbox/openapi.json", "GET /health", "GET /login", "POST /login", "GET /", "POST /mcp", "GET /mcp", "DELETE /mcp"}, New(Options{}).table...)
	sort.Strings(documented)
	sort.Strings(served)
	if strings.Join(documented, "\n") != strings.Join(served, "\n") {
		t.Fatalf("routes and openapi.json differ:\nserved:\n%s\n\ndocumented:\n%s", strings.Join(served, "\n"), strings.Join(documented, "\n"))
	}
}

func TestLoginGivesTheDashboardASession(t *testing.T) {
	t.Parallel()
	dash := fstest.MapFS{"index.html": {Data: []byte("<html><head><!--senclaw-token--></head></html>")}, "app.js": {Data: []byte("x")}}
	s := New(Options{Engine: testEngine(t), Token: testToken, Dashboard: dash})
	_, base := tcpServer(t, s)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, _ := noRedirect.Get(base + "/")
	if checkedBody(t, resp); resp.StatusCode != 401 {
		t.Fatalf("page without a session: %d", resp.StatusCode)
	}
	status, body := do(t, base, call{method: "POST", path: "/api/sandbox/login-codes"})
	if status != 200 {
		t.Fatal(body)
	}
	code := body["code"].(string)
	resp, _ = noRedirect.Get(base + "/login?code=" + code)
	if checkedBody(t, resp); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	cookie := resp.Cookies()[0]
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cookie)
	}
	if resp, _ := noRedirect.Get(base + "/login?code=" + code); checkedBody(t, resp) == nil || resp.StatusCode != 401 {
		t.Fatal("a login code worked twice")
	}
	page := pageToken(t, base, cookie)
	// The page token works with the cookie, and neither works alone; the
	// session id (the cookie's value) is no bearer token.
	withCookie := "senclaw_session=" + cookie.Value
	for _, tc := range []struct {
		name, bearer, cookie string
		status               int
	}{
		{"page_token_and_cookie", page, withCookie, 200},
		{"page_token_alone", page, "", 401},
		{"cookie_alone", "", withCookie, 401},
		{"session_id_as_bearer", cookie.Value, "", 401},
		{"session_id_as_bearer_with_cookie", cookie.Value, withCookie, 401},
	} {
		h := map[string]string{"Authorization": "", "Cookie": tc.cookie}
		if tc.bearer != "" {
			h["Authorization"] = "Bearer " + tc.bearer
		}
		for _, method := range []string{"GET", "POST"} {
			path := "/api/sandbox/status"
			if method == "POST" {
				path = "/api/sandbox/stop-all"
			}
			if status, body := do(t, base, call{method: method, path: path, headers: h}); status != tc.status {
				t.Errorf("%s %s: %d %v, want %d", tc.name, method, status, body, tc.status)
			}
		}
	}
}

// pageToken loads the dashboard with the session cookie and returns the
// page token the page got. The session id itself must not be in the page.
func pageToken(t *testing.T, base string, cookie *http.Cookie) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page := checkedBody(t, resp)
	if strings.Contains(string(page), cookie.Value) {
		t.Fatalf("the page's scripts can read the session id: %s", page)
	}
	_, rest, ok := strings.Cut(string(page), `<meta name="senclaw-token" content="`)
	token, _, _ := strings.Cut(rest, `"`)
	if resp.StatusCode != 200 || !ok || len(token) != 64 {
		t.Fatalf("page %d: %s", resp.StatusCode, page)
	}
	return token
}

func TestSocketNeedsNoTokenAndIsPrivate(t *testing.T) {
	t.Parallel()
	rt := filepath.Join(testDir(t), "rt")
	dash := fstest.MapFS{"index.html": {Data: []byte("<html><head><!--senclaw-token--></head></html>")}}
	s := New(Options{Engine: testEngine(t), Token: testToken, Dashboard: dash})
	lock, err := AcquireLock(rt)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := AcquireLock(rt); err == nil {
		t.Fatal("a second daemon got the lock")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan DaemonInfo, 1)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, DaemonOptions{RuntimeDir: rt, Ready: func(i DaemonInfo) { ready <- i }}) }()
	info := <-ready
	fi, err := os.Stat(info.Socket)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v", fi.Mode(), err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", info.Socket)
	}}}
	resp, err := hc.Get("http://senclaw/api/sandbox/status")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status over the socket: %v %v", resp, err)
	}
	// A desktop window attached to a running daemon loads the page over
	// the owner-only socket: it gets the page with no login.
	resp, err = hc.Get("http://senclaw/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(page), `<meta name="senclaw-token" content="inproc">`) {
		t.Fatalf("page over the socket: %d %s", resp.StatusCode, page)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(info.Socket); !os.IsNotExist(err) {
		t.Fatal("the socket was left behind")
	}
}

func TestANonLoopbackListenIsRefused(t *testing.T) {
	t.Parallel()
	for _, o := range []DaemonOptions{{Listen: "0.0.0.0:0"}, {Listen: "0.0.0.0:0", TLSCert: "c", TLSKey: "k"}} {
		if _, _, err := listenTCP(o); err == nil {
			t.Fatalf("%+v was accepted", o)
		}
	}
	l, url, err := listenTCP(DaemonOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatal(url)
	}
}

func TestTokenFileIsPrivateAndStable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(testDir(t), "cfg", "api-token")
	a, _, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	b, replaced, _ := LoadOrCreateToken(path)
	fi, _ := os.Stat(path)
	if a != b || replaced || len(a) != 64 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token %q %q (replaced %v) mode %v", a, b, replaced, fi.Mode())
	}
}

var _ = time.Second

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// TestASandboxNameWorksWhereAnIDDoes: every /sandboxes/{id} route takes a
// unique name too; a shared name is refused with the ids.
func TestASandboxNameWorksWhereAnIDDoes(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	_, base := tcpServer(t, New(Options{Engine: e, Token: testToken}))
	create := func(name string) string {
		status, body := do(t, base, call{method: "POST", path: "/api/sandbox/sandboxes", body: map[string]any{"name": name, "backend": "direct"}})
		if status != 201 {
			t.Fatalf("create %s: %d %v", name, status, body)
		}
		return body["sandbox"].(map[string]any)["id"].(string)
	}
	web := create("web")
	status, body := do(t, base, call{method: "GET", path: "/api/sandbox/sandboxes/web"})
	if status != 200 || body["id"] != web {
		t.Fatalf("GET by name: %d %v", status, body)
	}
	status, body = do(t, base, call{method: "POST", path: "/api/sandbox/sandboxes/web/exec", body: map[string]any{"command": "echo by-name"}})
	if status != 200 || !strings.Contains(mustJSON(body), "by-name") {
		t.Fatalf("exec by name: %d %v", status, body)
	}
	a, b := create("dup"), create("dup")
	status, body = do(t, base, call{method: "GET", path: "/api/sandbox/sandboxes/dup"})
	if status != 409 || !strings.Contains(mustJSON(body), a) || !strings.Contains(mustJSON(body), b) {
		t.Fatalf("a shared name: %d %v", status, body)
	}
	if status, _ := do(t, base, call{method: "GET", path: "/api/sandbox/sandboxes/nobody"}); status != 404 {
		t.Fatalf("an unknown name: %d", status)
	}
}

// A client that finds the socket finds the daemon's info file too: the
// socket is published only once info.json is written (`senclaw serve &
// senclaw mcp-config` read no info file before).
func TestSocketAppearsWithItsInfoFile(t *testing.T) {
	t.Parallel()
	rt := filepath.Join(testDir(t), "rt")
	s := New(Options{Engine: testEngine(t), Token: testToken})
	lock, err := AcquireLock(rt)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	sock := filepath.Join(rt, "api.sock")
	info := filepath.Join(rt, "info.json")
	seen := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			if _, err := os.Lstat(sock); err == nil {
				if _, err := os.Lstat(info); err != nil {
					seen <- fmt.Errorf("the socket was there before the info file: %v", err)
					return
				}
				seen <- nil
				return
			}
		}
		seen <- errors.New("no socket in 20 s")
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, DaemonOptions{Lock: lock, Listen: "127.0.0.1:0"}) }()
	if err := <-seen; err != nil {
		t.Error(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(rt, "*sock*")); len(left) != 0 {
		t.Fatalf("sockets left behind: %v", left)
	}
}
