package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/mcp"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/tenants"
	"github.com/senclaw/sandbox/app/tokens"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// httpDaemon is a daemon as `senclaw serve` hosts it: a real engine, the
// API on a Unix socket and on loopback TCP with a token, and /mcp.
type httpDaemon struct {
	base    string // http://127.0.0.1:PORT
	token   string
	socket  *client.Client
	sock    string
	engine  *app.Engine
	tokens  *tokens.Registry
	tenants *tenants.Directory
}

func startHTTPDaemon(t *testing.T, limits func() (time.Duration, int)) *httpDaemon {
	t.Helper()
	testutil.RequireBwrap(t)
	root := testDir(t)
	e, err := app.New(app.Options{
		DataDir: filepath.Join(root, "data"), ConfigDir: filepath.Join(root, "config"), RuntimeDir: filepath.Join(root, "run"), HomeDir: filepath.Join(root, "home"),
		Backends:  []backends.Backend{bwrap.New(bwrap.Options{}), direct.New()},
		EUID:      os.Geteuid(),
		Forwarder: netfwdtest.Path(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := api.AcquireLock(filepath.Join(root, "run"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	token := api.RandomToken()
	reg, err := tokens.New(tokens.Options{Docs: e.TokenDocs()})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := tenants.New(tenants.Options{Engine: e, Docs: e.TenantDocs(), Tokens: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Options{Engine: e, Token: token, Tokens: reg, Tenants: dir})
	if limits == nil {
		limits = func() (time.Duration, int) {
			s := e.Settings()
			return time.Duration(s.McpSessionIdleMinutes) * time.Minute, s.McpMaxSessions
		}
	}
	mh := mcp.NewHTTPHandler(mcp.HTTPOptions{
		Principal: func(r *http.Request) principal.Principal { return api.Principal(r.Context()) },
		ClientFor: func(p principal.Principal) *client.Client {
			return client.InProcess(srv, "", func(ctx context.Context) context.Context { return api.As(ctx, p) })
		},
		Limits: limits, Version: "test", SweepEvery: 50 * time.Millisecond,
	})
	srv.MountMCP(mh)
	ready := make(chan api.DaemonInfo, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(ctx, api.DaemonOptions{RuntimeDir: filepath.Join(root, "run"), Listen: "127.0.0.1:0", Ready: func(i api.DaemonInfo) { ready <- i }})
	}()
	var info api.DaemonInfo
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatalf("the API did not start: %v", err)
	}
	t.Cleanup(func() {
		mh.Close()
		cancel()
		<-done
		e.Close()
		lock.Release()
	})
	return &httpDaemon{base: info.URL, token: token, socket: client.DialSocket(info.Socket), sock: info.Socket, engine: e, tokens: reg, tenants: dir}
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// socketHTTP is an HTTP client of the daemon's Unix socket.
func socketHTTP(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

// connectHTTP opens an MCP session over Streamable HTTP with the official
// SDK client, as an agent configured with the URL and the token does.
func connectHTTP(t *testing.T, d *httpDaemon, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return connectHTTPAs(t, d, d.token, opts)
}

// connectHTTPAs is connectHTTP with the token tok.
func connectHTTPAs(t *testing.T, d *httpDaemon, tok string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: d.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "http-agent", Version: "v0"}, opts).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestHTTPServesTheSameTools lists the tools over HTTP and over the stdio
// server's transport: one table, the same names, descriptions and
// schemas.
func TestHTTPServesTheSameTools(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, nil)
	ctx := context.Background()
	over := func(cs *sdk.ClientSession) map[string]string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, tool := range res.Tools {
			data, _ := json.Marshal(tool)
			out[tool.Name] = string(data)
		}
		return out
	}
	// The owner's token over HTTP, the owner's socket for stdio: the 22
	// tools and the owner's own, sbx_security_events and sbx_policy_check.
	viaHTTP, viaStdio := over(connectHTTP(t, d, nil)), over(connect(t, d.socket))
	if len(viaHTTP) != 24 || len(viaStdio) != 24 {
		t.Fatalf("%d tools over HTTP and %d over stdio, want 24", len(viaHTTP), len(viaStdio))
	}
	for name, def := range viaStdio {
		if viaHTTP[name] != def {
			t.Errorf("%s differs:\nstdio %s\nhttp  %s", name, def, viaHTTP[name])
		}
	}
}

// TestHTTPCallsEveryTool drives all 22 tools over HTTP with the official
// SDK client: each answers (a tool error only where one is due).
func TestHTTPCallsEveryTool(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, nil)
	cs := connectHTTP(t, d, nil)
	mountDir := testDir(t)
	called := map[string]bool{}
	do := func(name string, args map[string]any) result {
		called[name] = true
		return ok(t, cs, name, args)
	}
	do("sbx_capabilities", map[string]any{})
	do("sbx_settings", map[string]any{})
	run := do("sbx_run", map[string]any{"language": "python", "code": "print(6*7)"})
	if got := get(run.obj, "run", "stdout"); got != "42\n" {
		t.Fatalf("sbx_run over HTTP printed %q", got)
	}
	id := do("sbx_create", map[string]any{"name": "over-http"}).obj["sandboxId"].(string)
	do("sbx_list", map[string]any{})
	do("sbx_update", map[string]any{"sandboxId": id, "memoryMb": 256})
	do("sbx_file_write", map[string]any{"sandboxId": id, "path": "a.txt", "content": "hello"})
	do("sbx_files", map[string]any{"sandboxId": id})
	called["sbx_file_read"] = true
	if r := callTool(t, cs, "sbx_file_read", map[string]any{"sandboxId": id, "path": "a.txt"}); r.isErr || !strings.Contains(r.text, "hello") {
		t.Fatalf("sbx_file_read: %+v", r)
	}
	if got := get(do("sbx_exec", map[string]any{"sandboxId": id, "command": "cat a.txt"}).obj, "stdout"); got != "hello" {
		t.Fatalf("sbx_exec printed %q", got)
	}
	do("sbx_run_in", map[string]any{"sandboxId": id, "language": "bash", "code": "echo in"})
	called["sbx_install"] = true
	fails(t, cs, "sbx_install", map[string]any{"sandboxId": id, "manager": "pip", "packages": []string{"requests"}}, "network")
	do("sbx_stats", map[string]any{"sandboxId": id})
	do("sbx_kill", map[string]any{"sandboxId": id})
	do("sbx_mount", map[string]any{"sandboxId": id, "source": mountDir, "target": "m", "readOnly": true})
	do("sbx_unmount", map[string]any{"sandboxId": id, "target": "m"})
	do("sbx_fs_mode", map[string]any{"sandboxId": id, "fsMode": "strict"})
	do("sbx_ports", map[string]any{"sandboxId": id, "listen": []int{8123}})
	do("sbx_trace", map[string]any{"sandboxId": id, "enabled": true})
	do("sbx_events", map[string]any{"sandboxId": id})
	do("sbx_runs", map[string]any{"sandboxId": id})
	do("sbx_delete", map[string]any{"sandboxId": id, "purge": true})
	if len(called) != 22 {
		t.Fatalf("called %d tools, want all 22: %v", len(called), called)
	}
	// Runs over HTTP are MCP runs, installs included.
	runs, err := d.socket.Runs(context.Background(), "", 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Source != app.SourceMCP {
			t.Errorf("run %s (%s) has source %q, want mcp", r.ID, r.Command, r.Source)
		}
	}
}

// TestProgressDuringALongRun asks for progress on a 3 s run, over HTTP and
// over the stdio server's transport: notifications come while it runs,
// with the output so far, and the result still carries all the output.
func TestProgressDuringALongRun(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, nil)
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			var mu sync.Mutex
			var notes []*sdk.ProgressNotificationParams
			var firstAt time.Time
			opts := &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
				mu.Lock()
				defer mu.Unlock()
				if firstAt.IsZero() {
					firstAt = time.Now()
				}
				notes = append(notes, req.Params)
			}}
			var cs *sdk.ClientSession
			if transport == "http" {
				cs = connectHTTP(t, d, opts)
			} else {
				cs = connectWith(t, d.socket, opts)
			}
			params := &sdk.CallToolParams{Name: "sbx_run", Arguments: map[string]any{"command": "for i in 1 2 3; do echo tick $i; sleep 1; done"}}
			params.SetProgressToken("run-1")
			start := time.Now()
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				t.Fatalf("sbx_run: %v %+v", err, res)
			}
			ended := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if len(notes) < 2 || !firstAt.Before(ended.Add(-time.Second)) {
				t.Fatalf("%d progress notifications, the first %v after the start of a %v run; want several during it", len(notes), firstAt.Sub(start), ended.Sub(start))
			}
			sawTick := false
			for i, n := range notes {
				if n.ProgressToken != "run-1" || (i > 0 && n.Progress <= notes[i-1].Progress) {
					t.Errorf("notification %d: %+v", i, n)
				}
				sawTick = sawTick || strings.Contains(n.Message, "tick 1")
			}
			if !sawTick {
				t.Errorf("no notification carried the output so far: %+v", notes[len(notes)-1])
			}
			data, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(data), `tick 1\ntick 2\ntick 3\n`) {
				t.Errorf("the result lost the streamed output: %s", data)
			}
		})
	}
}

// TestCancelKillsTheRun cancels a tool call from the client, over HTTP and
// over the stdio server's transport: the run is killed and recorded as
// cancelled, and nothing of it is left running.
func TestCancelKillsTheRun(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, nil)
	ctx := context.Background()
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			var cs *sdk.ClientSession
			if transport == "http" {
				cs = connectHTTP(t, d, nil)
			} else {
				cs = connectWith(t, d.socket, nil)
			}
			id := ok(t, cs, "sbx_create", map[string]any{"name": "cancel-" + transport}).obj["sandboxId"].(string)
			callCtx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: "sbx_exec", Arguments: map[string]any{"sandboxId": id, "command": "echo started; sleep 120", "timeoutMs": 300000}})
				errc <- err
			}()
			testutil.WaitFor(t, 20*time.Second, "the run to start", func() bool {
				runs, _ := d.socket.Runs(ctx, id, 1)
				st, _ := d.socket.SandboxStats(ctx, id)
				// A foreground run is recorded as running while it goes.
				return len(runs) == 1 && runs[0].State == "running" && st != nil && len(st.Processes) > 0
			})
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled call returned %v", err)
			}
			var rec app.RunRecord
			testutil.WaitFor(t, 20*time.Second, "the cancelled run's record", func() bool {
				runs, _ := d.socket.Runs(ctx, id, 1)
				if len(runs) == 1 {
					rec = runs[0]
				}
				return len(runs) == 1 && rec.State == "done"
			})
			if !strings.Contains(rec.Killed, "cancelled") || rec.ExitCode != nil {
				t.Fatalf("the record of a cancelled run: killed %q, exit %v", rec.Killed, rec.ExitCode)
			}
			if st, err := d.socket.SandboxStats(ctx, id); err != nil || len(st.Processes) != 0 {
				t.Fatalf("processes left after the cancel: %v %+v", err, st)
			}
		})
	}
}

// TestHTTPSessionsAreBoundToWhoOpenedThem: a session opened with one
// principal (the owner's socket) cannot be used with another (the API
// token over TCP); Host and Origin are checked before the MCP layer.
func TestHTTPSessionsAreBoundToWhoOpenedThem(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, nil)
	ctx := context.Background()
	// A session over the owner's socket.
	sockTr := &sdk.StreamableClientTransport{Endpoint: "http://senclaw/mcp", HTTPClient: socketHTTP(d.sock)}
	owner, err := sdk.NewClient(&sdk.Implementation{Name: "socket-agent", Version: "v0"}, nil).Connect(ctx, sockTr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := owner.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	post := func(c *http.Client, url string, headers map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(ping))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		for k, v := range headers {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	withToken := map[string]string{"Authorization": "Bearer " + d.token, "Mcp-Session-Id": owner.ID()}
	if code, body := post(http.DefaultClient, d.base+"/mcp", withToken); code != http.StatusForbidden || !strings.Contains(body, "another token") {
		t.Fatalf("the socket's session used with the API token: %d %s", code, body)
	}
	if code, body := post(socketHTTP(d.sock), "http://senclaw/mcp", map[string]string{"Mcp-Session-Id": owner.ID()}); code != http.StatusOK || !strings.Contains(body, `"id":7`) {
		t.Fatalf("the session over its own socket: %d %s", code, body)
	}
	host := strings.TrimPrefix(d.base, "http://")
	for name, h := range map[string]map[string]string{
		"no token":       {},
		"rebinding Host": {"Authorization": "Bearer " + d.token, "Host": "evil.example.com"},
		"cross-site":     {"Authorization": "Bearer " + d.token, "Origin": "http://evil.example.com"},
	} {
		code, body := post(http.DefaultClient, d.base+"/mcp", h)
		if code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 401 or 403 before the MCP layer", name, code, body)
		}
		if strings.Contains(body, "jsonrpc") {
			t.Errorf("%s reached the MCP layer: %s", name, body)
		}
	}
	if code, _ := post(http.DefaultClient, d.base+"/mcp", map[string]string{"Authorization": "Bearer " + d.token, "Origin": "http://" + host}); code != http.StatusOK {
		t.Errorf("this server's own Origin: %d", code)
	}

}

// TestHTTPSessionBound: at mcpMaxSessions a new session of the same
// token closes that token's least recently used idle session, as a
// client that reconnects without closing its sessions (one that
// restarted, the conformance suite) needs; only when every session is
// busy with a tool call is it answered 429. Another principal has its
// own count. Before, the new session was refused while the old ones sat
// idle, for as long as the idle setting (30 minutes).
func TestHTTPSessionBound(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, nil)
	ctx := context.Background()
	if _, err := d.socket.SetSettings(ctx, map[string]any{"mcpMaxSessions": 2}); err != nil {
		t.Fatal(err)
	}
	// Raw requests, as a client that forgets its sessions sends them.
	post := func(sid, body string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, d.base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+d.token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(data)
	}
	initialize := func() (int, string, string) {
		return post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	}
	ping := func(sid string) int {
		code, _, _ := post(sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		return code
	}
	var sids []string
	for i := range 2 {
		code, sid, body := initialize()
		if code != http.StatusOK || sid == "" {
			t.Fatalf("session %d of 2: %d %q %s", i+1, code, sid, body)
		}
		post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		sids = append(sids, sid)
	}
	if ping(sids[0]) != http.StatusOK { // the second is now the least recently used
		t.Fatal("the first session does not answer")
	}
	for i := range 3 { // a client that reconnects, again and again
		code, sid, body := initialize()
		if code != http.StatusOK || sid == "" {
			t.Fatalf("reconnect %d at the bound of 2: %d %s, want a new session", i+1, code, body)
		}
		post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		sids = append(sids, sid)
	}
	// Left: the last two opened (the second went first, then the first).
	for i, sid := range sids {
		want := http.StatusNotFound
		if i >= len(sids)-2 {
			want = http.StatusOK
		}
		if code := ping(sid); code != want {
			t.Errorf("session %d: ping answered %d, want %d", i+1, code, want)
		}
	}

	// Every session busy with a tool call: a new one is refused.
	busy := make(chan error, 2)
	for _, sid := range sids[len(sids)-2:] {
		go func() {
			code, _, body := post(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sbx_run","arguments":{"command":"sleep 2"}}}`)
			if code != http.StatusOK {
				busy <- fmt.Errorf("%d %s", code, body)
				return
			}
			busy <- nil
		}()
	}
	time.Sleep(500 * time.Millisecond)
	if code, _, body := initialize(); code != http.StatusTooManyRequests || !strings.Contains(body, "mcpMaxSessions") || !strings.Contains(body, "busy") {
		t.Fatalf("a new session while both are busy: %d %s, want 429", code, body)
	}
	for range 2 {
		if err := <-busy; err != nil {
			t.Fatalf("a busy session's call: %v", err)
		}
	}
	// The socket's principal has its own count.
	other, err := sdk.NewClient(&sdk.Implementation{Name: "socket-2", Version: "v0"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://senclaw/mcp", HTTPClient: socketHTTP(d.sock)}, nil)
	if err != nil {
		t.Fatalf("the owner's socket session: %v", err)
	}
	other.Close()
}

// TestIdleSessionsAreClosed: a session with no request for longer than the
// idle setting is closed; one busy with a tool call is not.
func TestIdleSessionsAreClosed(t *testing.T) {
	t.Parallel()
	idle := 400 * time.Millisecond
	d := startHTTPDaemon(t, func() (time.Duration, int) { return idle, 16 })
	ctx := context.Background()
	busy := connectHTTP(t, d, nil)
	quiet := connectHTTP(t, d, nil)
	res, err := busy.CallTool(ctx, &sdk.CallToolParams{Name: "sbx_run", Arguments: map[string]any{"command": "sleep 2; echo done"}})
	if err != nil || res.IsError {
		t.Fatalf("a 2 s call on a session whose idle limit is %v: %v %+v", idle, err, res)
	}
	if _, err := quiet.ListTools(ctx, nil); err == nil {
		t.Fatal("the quiet session is still open after 2 s idle")
	}
}
