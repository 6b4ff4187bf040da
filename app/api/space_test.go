package api

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
)

// spaceServer is an API server over loopback TCP with a bwrap engine and
// its Space Apps supervisor, the engine told the API's port as the
// daemon does.
func spaceServer(t *testing.T) (base string, e *app.Engine, apps *spaceapps.Supervisor) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bwrap is required under CI: %v", err)
		}
		t.Skipf("bwrap is not installed: %v", err)
	}
	var user *backends.Credential
	if os.Geteuid() == 0 {
		user = &backends.Credential{UID: 65534, GID: 65534}
	}
	root := testDir(t)
	e, err := app.New(app.Options{DataDir: filepath.Join(root, "data"), ConfigDir: filepath.Join(root, "config"), RuntimeDir: filepath.Join(root, "run"), HomeDir: filepath.Join(root, "home"),
		Backends: []backends.Backend{bwrap.New(bwrap.Options{SandboxUser: user}), direct.New()}, EUID: os.Geteuid(), Forwarder: netfwdtest.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	apps, err = spaceapps.New(spaceapps.Options{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { apps.Close(); cancel(); e.Close() })
	_, base = tcpServer(t, New(Options{Engine: e, Apps: apps, Token: testToken}))
	u, _ := url.Parse(base)
	port, _ := strconv.Atoi(u.Port())
	e.ProtectPort(port)
	apps.SetAPI(base)
	return base, e, apps
}

// callerApp asks the engine's API from inside its sandbox with its own
// token (SENCLAW_APP_TOKEN at SENCLAW_API_URL) and reports the status.
const callerApp = `import json, os, sys, signal, urllib.request, urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

class H(BaseHTTPRequestHandler):
    def reply(self, text):
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        u = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path == "/health":
            return self.reply("ok")
        if u.path == "/env":
            return self.reply(json.dumps(dict(os.environ)))
        req = urllib.request.Request(os.environ.get("SENCLAW_API_URL", "http://127.0.0.1:1") + q["path"], method=q.get("method", "GET"))
        if os.environ.get("SENCLAW_APP_TOKEN"):
            req.add_header("Authorization", "Bearer " + os.environ["SENCLAW_APP_TOKEN"])
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                self.reply("%d %s" % (r.status, r.read().decode()[:200]))
        except urllib.error.HTTPError as e:
            self.reply("%d %s" % (e.code, e.read().decode()[:200]))
        except Exception as e:
            self.reply("error %s" % e)

    def log_message(self, *a):
        sys.stderr.write("served %s\n" % self.path)

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
`

func appDir(t *testing.T, manifest string, files map[string]string) string {
	t.Helper()
	dir := testDir(t)
	// Listable, as people's folders are: the engine copies it as the
	// sandbox user.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files[spaceapps.ManifestFile] = manifest
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func appGet(t *testing.T, port int, path string) string {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port) + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}

// TestAnAppsOwnTokenReachesOnlyItsOwnRoutes: a sandboxed app with
// daemonApi reaches the engine's API through its loopback rule and its
// own token reads its own runtime and logs, and nothing else: not the
// sandboxes, not the list, not another app, no action. An app without
// daemonApi cannot reach the API's port at all, and never sees the
// engine's token.
func TestAnAppsOwnTokenReachesOnlyItsOwnRoutes(t *testing.T) {
	t.Parallel()
	base, _, _ := spaceServer(t)
	reg := func(id, sandbox string) map[string]any {
		dir := appDir(t, `{"id": "`+id+`", "name": "`+id+`", "runtime": {"start": "python3 caller.py"}, "sandbox": `+sandbox+`}`, map[string]string{"caller.py": callerApp})
		if status, body := do(t, base, call{method: "POST", path: "/api/space/apps", body: map[string]any{"dir": dir}}); status != 201 {
			t.Fatalf("register %s: %d %v", id, status, body)
		}
		status, body := do(t, base, call{method: "POST", path: "/api/space/apps/" + id + "/start"})
		if status != 200 || body["ok"] != true {
			t.Fatalf("start %s: %d %v", id, status, body)
		}
		return body["app"].(map[string]any)
	}
	caller := reg("caller", `{"enabled": true, "network": "off", "daemonApi": true}`)
	other := reg("other", `{"enabled": true, "network": "all"}`)
	port := int(caller["port"].(float64))
	ask := func(path, method string) string {
		return appGet(t, port, "/call?path="+url.QueryEscape(path)+"&method="+method)
	}
	cases := []struct{ path, method, want string }{
		{"/api/space/apps/caller/runtime", "GET", "200 "},
		{"/api/space/apps/caller/logs?limit=100", "GET", "200 "},
		{"/api/sandbox/sandboxes", "GET", "403 "},
		{"/api/sandbox/status", "GET", "403 "},
		{"/api/space/apps", "GET", "403 "},
		{"/api/space/apps/other/runtime", "GET", "404 "},
		{"/api/space/apps/other/logs", "GET", "404 "},
		{"/api/space/apps/caller", "GET", "403 "},
		{"/api/space/apps/caller/stop", "POST", "403 "},
		{"/api/space/apps/caller/sandbox", "GET", "403 "},
		{"/api/sandbox/openapi.json", "GET", "403 "},
	}
	for _, c := range cases {
		if got := ask(c.path, c.method); !strings.HasPrefix(got, c.want) {
			t.Errorf("from inside the sandbox, %s %s: %q, want %q", c.method, c.path, got, c.want)
		}
	}
	env := appGet(t, port, "/env")
	if strings.Contains(env, testToken) {
		t.Fatal("the app saw the engine's API token")
	}
	var vars map[string]string
	_ = json.Unmarshal([]byte(env), &vars)
	tok := vars["SENCLAW_APP_TOKEN"]
	if len(tok) != 64 || vars["SENCLAW_API_URL"] != base {
		t.Fatalf("the app's API variables: %v", vars)
	}
	// The same token from outside: the same scope.
	with := map[string]string{"Authorization": "Bearer " + tok}
	if status, _ := do(t, base, call{method: "GET", path: "/api/space/apps/caller/runtime", headers: with}); status != 200 {
		t.Errorf("own runtime with its token: %d", status)
	}
	if status, _ := do(t, base, call{method: "DELETE", path: "/api/space/apps/caller/logs", headers: with}); status != 403 {
		t.Errorf("clearing its own log with its token: %d", status)
	}
	if status, _ := do(t, base, call{method: "POST", path: "/api/sandbox/sandboxes", headers: with, body: map[string]any{}}); status != 403 {
		t.Errorf("creating a sandbox with an app's token: %d", status)
	}
	// The other app has no token and no way to the API's port.
	oport := int(other["port"].(float64))
	if got := appGet(t, oport, "/call?path=/api/sandbox/health&method=GET"); strings.HasPrefix(got, "200") || strings.HasPrefix(got, "401") {
		t.Errorf("an app without daemonApi reached the API: %q", got)
	}
	// The token dies with the launch.
	if status, _ := do(t, base, call{method: "POST", path: "/api/space/apps/caller/stop"}); status != 200 {
		t.Fatal("stop")
	}
	if status, _ := do(t, base, call{method: "GET", path: "/api/space/apps/caller/runtime", headers: with}); status != 401 {
		t.Errorf("a stopped launch's token still works: %d", status)
	}
}

// TestEverySpaceRoute drives each Space Apps route with good and bad
// input through a real engine and supervisor.
func TestEverySpaceRoute(t *testing.T) {
	t.Parallel()
	base, _, _ := spaceServer(t)
	src, _ := filepath.Abs("../../examples/space-apps")
	a := "/api/space/apps/notes"
	good := []struct {
		c    call
		want int
		has  string
	}{
		{call{method: "POST", path: "/api/space/apps", body: map[string]any{"dir": src}}, 201, `"created":true`},
		{call{method: "POST", path: "/api/space/apps", body: map[string]any{"dir": src}}, 200, `"created":false`},
		{call{method: "GET", path: "/api/space/apps"}, 200, `"overview"`},
		{call{method: "GET", path: a}, 200, `"manifest"`},
		{call{method: "GET", path: a + "/sandbox"}, 200, `"liveFields":["hosts","allowHttp"]`},
		{call{method: "PUT", path: a + "/sandbox", body: map[string]any{"hosts": []string{"https://pypi.org/simple"}}}, 200, `"pypi.org"`},
		{call{method: "POST", path: a + "/start"}, 200, `"ok":true`},
		{call{method: "GET", path: a + "/runtime"}, 200, `"sockets"`},
		{call{method: "GET", path: a + "/logs?limit=4096"}, 200, "isolation bwrap"},
		{call{method: "GET", path: a + "/isolation"}, 200, `"enforced"`},
		{call{method: "PUT", path: a + "/sandbox", body: map[string]any{"readMode": "open"}}, 200, `"pendingRestart":["readMode"]`},
		{call{method: "POST", path: a + "/restart"}, 200, `"needsRestart":false`},
		{call{method: "DELETE", path: a + "/logs"}, 200, "cleared"},
		{call{method: "POST", path: a + "/stop"}, 200, `"stoppedByUser":true`},
		{call{method: "POST", path: a + "/start?wait=false"}, 200, `"ok":true`},
		{call{method: "DELETE", path: a + "?purge=true"}, 200, "purged"},
	}
	for _, g := range good {
		status, body := do(t, base, g.c)
		raw := mustJSON(body)
		if status != g.want || !strings.Contains(raw, g.has) {
			t.Errorf("%s %s: %d %s (want %d containing %q)", g.c.method, g.c.path, status, raw, g.want, g.has)
		}
	}
	do(t, base, call{method: "POST", path: "/api/space/apps", body: map[string]any{"dir": src}})
	bad := []struct {
		c     call
		want  int
		field string
	}{
		{call{method: "POST", path: "/api/space/apps", body: map[string]any{"dir": "relative"}}, 400, "dir"},
		{call{method: "POST", path: "/api/space/apps", body: `{"dir": "/x", "bogus": 1}`}, 400, ""},
		{call{method: "POST", path: "/api/space/apps", body: map[string]any{"dir": src, "env": map[string]string{"PORT": "1"}}}, 400, "env"},
		{call{method: "GET", path: "/api/space/apps/nope"}, 404, ""},
		{call{method: "POST", path: "/api/space/apps/nope/start"}, 404, ""},
		{call{method: "DELETE", path: "/api/space/apps/nope"}, 404, ""},
		{call{method: "PUT", path: a + "/sandbox", body: map[string]any{"network": "some"}}, 400, "network"},
		{call{method: "PUT", path: a + "/sandbox", body: map[string]any{"readMode": "everything"}}, 400, "readMode"},
		{call{method: "PUT", path: a + "/sandbox", body: map[string]any{"hosts": []string{"127.0.0.1"}}}, 400, "hosts[0]"},
		{call{method: "PUT", path: a + "/sandbox", body: map[string]any{"folders": []map[string]any{{"path": "/etc"}}}}, 400, "folders[0].path"},
		{call{method: "PUT", path: a + "/sandbox", body: map[string]any{"backend": "chroot"}}, 400, "backend"},
		{call{method: "PUT", path: a + "/sandbox", body: `{"colour": "red"}`}, 400, ""},
		{call{method: "GET", path: a + "/logs?limit=0"}, 400, "limit"},
		{call{method: "GET", path: a + "/logs?limit=2000000"}, 400, "limit"},
		{call{method: "POST", path: a + "/start?wait=maybe"}, 400, "wait"},
	}
	for _, b := range bad {
		status, body := do(t, base, b.c)
		if status != b.want || body["error"] == nil || body["error"] == "" {
			t.Errorf("%s %s %v: %d %v (want %d)", b.c.method, b.c.path, b.c.body, status, body, b.want)
			continue
		}
		if b.field != "" && !strings.Contains(mustJSON(body), b.field) {
			t.Errorf("%s %s: the error does not name %s: %v", b.c.method, b.c.path, b.field, body)
		}
	}
	if _, body := do(t, base, call{method: "GET", path: a + "/sandbox"}); !strings.Contains(mustJSON(body), `"readMode":"strict"`) || !strings.Contains(mustJSON(body), `"network":"off"`) {
		t.Errorf("bad input changed the configuration: %v", body)
	}
}

// TestSpaceAppsFromAZipAndFollowingTheLog: a zip uploaded as the body and
// as a multipart form registers; the log can be followed live.
func TestSpaceAppsFromAZipAndFollowingTheLog(t *testing.T) {
	t.Parallel()
	base, _, _ := spaceServer(t)
	src := "../../examples/space-apps"
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"senclaw-app.json", "app.py"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		w, _ := zw.Create("notes/" + name)
		w.Write(data)
	}
	zw.Close()
	post := func(ctype string, body io.Reader) (int, string) {
		req, _ := http.NewRequest("POST", base+"/api/space/apps", body)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if status, body := post("application/zip", bytes.NewReader(buf.Bytes())); status != 201 {
		t.Fatalf("zip body: %d %s", status, body)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	ew, _ := mw.CreateFormField("env")
	ew.Write([]byte(`{"NOTES_TITLE": "mine"}`))
	fw, _ := mw.CreateFormFile("file", "notes.zip")
	fw.Write(buf.Bytes())
	mw.Close()
	if status, body := post(mw.FormDataContentType(), &form); status != 200 || !strings.Contains(body, `"created":false`) {
		t.Fatalf("multipart: %d %s", status, body)
	}
	if _, body := do(t, base, call{method: "GET", path: "/api/space/apps/notes"}); body["source"] != "zip upload" || !strings.Contains(mustJSON(body), "NOTES_TITLE") {
		t.Fatalf("detail %v", body)
	}
	status, body := do(t, base, call{method: "POST", path: "/api/space/apps/notes/start"})
	if status != 200 {
		t.Fatalf("start %d %v", status, body)
	}
	port := int(body["app"].(map[string]any)["port"].(float64))
	req, _ := http.NewRequest("GET", base+"/api/space/apps/notes/logs?follow=1&limit=1024", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("follow content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"appId":"notes"`) {
		t.Fatalf("first line %q", lines.Text())
	}
	appGet(t, port, "/notes")
	for lines.Scan() {
		if strings.Contains(lines.Text(), "GET /notes") {
			return
		}
	}
	t.Fatalf("the followed log never showed the request: %v", lines.Err())
}
