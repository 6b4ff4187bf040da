package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/tenants"
	"github.com/senclaw/sandbox/app/tokens"
)

// principalServer is a server with an engine, its token registry and a
// scheduler, over loopback TCP.
func principalServer(t *testing.T) (*Server, *app.Engine, *tokens.Registry, string) {
	t.Helper()
	e := testEngine(t)
	reg, err := tokens.New(tokens.Options{Docs: e.TokenDocs()})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Engine: e, Token: testToken, Tokens: reg, Scheduler: testScheduler(t, e), OnStop: func() {}})
	_, base := tcpServer(t, s)
	return s, e, reg, base
}

// doAs is do with tok as the bearer token ("" for none).
func doAs(t *testing.T, base, tok string, c call) (int, map[string]any) {
	t.Helper()
	if c.headers == nil {
		c.headers = map[string]string{}
	}
	c.headers["Authorization"] = "Bearer " + tok
	if tok == "" {
		c.headers["Authorization"] = ""
	}
	return do(t, base, c)
}

// TestTokensAreShownOnceAndStoredHashed: a token's secret is in the
// answer that makes it and nowhere else (not in lists, not in the
// store); rotating it ends the old secret at once; removing it ends the
// token.
func TestTokensAreShownOnceAndStoredHashed(t *testing.T) {
	t.Parallel()
	_, e, _, base := principalServer(t)
	code, body := do(t, base, call{method: "POST", path: "/api/sandbox/tokens", body: map[string]any{"name": "claude-code", "tools": []string{"sbx_run", "sbx_runs"}}})
	secret, _ := body["secret"].(string)
	if code != 201 || !strings.HasPrefix(secret, "sclw_") || len(secret) < 50 {
		t.Fatalf("create: %d %v", code, body)
	}
	if code, body := do(t, base, call{method: "POST", path: "/api/sandbox/tokens", body: map[string]any{"name": "claude-code"}}); code != 409 {
		t.Fatalf("a second token of the name: %d %v", code, body)
	}
	code, list := do(t, base, call{method: "GET", path: "/api/sandbox/tokens"})
	raw, _ := json.Marshal(list)
	if code != 200 || strings.Contains(string(raw), secret) || !strings.Contains(string(raw), `"name":"claude-code"`) {
		t.Fatalf("list: %d %s", code, raw)
	}
	var stored bytes.Buffer
	_ = e.TokenDocs().Each(func(data []byte) error { stored.Write(data); return nil })
	if strings.Contains(stored.String(), secret) || !strings.Contains(stored.String(), `"hash"`) {
		t.Fatalf("the store holds %s", stored.String())
	}
	if code, who := doAs(t, base, secret, call{method: "GET", path: "/api/sandbox/whoami"}); code != 200 || who["kind"] != "agent" || who["name"] != "claude-code" {
		t.Fatalf("whoami with the token: %d %v", code, who)
	}
	code, body = do(t, base, call{method: "POST", path: "/api/sandbox/tokens/claude-code/rotate"})
	next, _ := body["secret"].(string)
	if code != 200 || next == "" || next == secret {
		t.Fatalf("rotate: %d %v", code, body)
	}
	if code, _ := doAs(t, base, secret, call{method: "GET", path: "/api/sandbox/whoami"}); code != 401 {
		t.Fatalf("the rotated-out secret: %d, want 401", code)
	}
	if code, body := do(t, base, call{method: "PATCH", path: "/api/sandbox/tokens/claude-code", body: map[string]any{"tools": nil}}); code != 200 || body["tools"] != nil {
		t.Fatalf("patch tools null: %d %v", code, body)
	}
	if code, body := do(t, base, call{method: "PATCH", path: "/api/sandbox/tokens/claude-code", body: map[string]any{"tools": []string{"rm_rf"}}}); code != 400 || !strings.Contains(body["error"].(string), "rm_rf") {
		t.Fatalf("patch an unknown tool: %d %v", code, body)
	}
	if code, body := do(t, base, call{method: "DELETE", path: "/api/sandbox/tokens/claude-code"}); code != 200 || body["name"] != "claude-code" {
		t.Fatalf("delete: %d %v", code, body)
	}
	if code, _ := doAs(t, base, next, call{method: "GET", path: "/api/sandbox/whoami"}); code != 401 {
		t.Fatalf("a removed token: %d, want 401", code)
	}
}

// TestAnAgentTokenNeverHoldsTheOwnersPower: every operation that changes
// what the engine enforces answers an agent's token 403 with the scope
// named, before anything happens, and nothing changed.
func TestAnAgentTokenNeverHoldsTheOwnersPower(t *testing.T) {
	t.Parallel()
	_, e, reg, base := principalServer(t)
	iss, err := reg.Add("bot", "agent", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The owner's schedule, whose firings run on the host (the Scheduler
	// scripts switch is off): an agent may not touch it.
	code, body := do(t, base, call{method: "POST", path: "/api/sandbox/schedules", body: map[string]any{"name": "owners", "cron": "@daily", "code": "echo owner"}})
	if code != 201 {
		t.Fatalf("the owner's schedule: %d %v", code, body)
	}
	sch := "/api/sandbox/schedules/" + body["schedule"].(map[string]any)["id"].(string)
	policyBefore, settingsBefore := e.Policy(), e.Settings()
	owner := []struct {
		c     call
		scope string
	}{
		{call{method: "PUT", path: "/api/sandbox/exec-policy", body: map[string]any{"execShell": false, "runPython": false}}, "policy:write"},
		{call{method: "PUT", path: "/api/sandbox/settings", body: map[string]any{"allowDirect": true}}, "settings:write"},
		{call{method: "PUT", path: "/api/sandbox/settings", body: map[string]any{"defaultCpus": 2}}, "settings:write"},
		{call{method: "PUT", path: "/api/sandbox/settings", body: map[string]any{"mountAllow": []string{"/"}}}, "settings:write"},
		{call{method: "POST", path: "/api/sandbox/schedules", body: map[string]any{"name": "root", "cron": "@hourly", "code": "id"}}, "schedules:host"},
		{call{method: "PATCH", path: sch, body: map[string]any{"cron": "@every 10s"}}, "schedules:host"},
		{call{method: "PATCH", path: sch, body: map[string]any{"code": "id"}}, "schedules:host"},
		{call{method: "POST", path: sch + "/run"}, "schedules:host"},
		{call{method: "POST", path: sch + "/resume"}, "schedules:host"},
		{call{method: "POST", path: "/api/sandbox/tokens", body: map[string]any{"name": "more"}}, "tokens:admin"},
		{call{method: "GET", path: "/api/sandbox/tokens"}, "tokens:admin"},
		{call{method: "POST", path: "/api/sandbox/tokens/bot/rotate"}, "tokens:admin"},
		{call{method: "DELETE", path: "/api/sandbox/tokens/bot"}, "tokens:admin"},
		{call{method: "POST", path: "/api/sandbox/daemon/stop"}, "daemon:admin"},
		{call{method: "POST", path: "/api/sandbox/login-codes"}, "daemon:admin"},
		{call{method: "POST", path: "/api/sandbox/stop-all"}, "daemon:admin"},
	}
	for _, tc := range owner {
		code, body := doAs(t, base, iss.Secret, tc.c)
		if code != 403 || body["scope"] != tc.scope || !strings.Contains(body["error"].(string), tc.scope) || !strings.Contains(body["error"].(string), `agent "bot"`) {
			t.Errorf("%s %s as an agent: %d %v, want 403 naming %s", tc.c.method, tc.c.path, code, body, tc.scope)
		}
	}
	if p, s := e.Policy(), e.Settings(); !samePolicy(p, policyBefore) || s.AllowDirect != settingsBefore.AllowDirect || s.DefaultCPUs != settingsBefore.DefaultCPUs || len(s.MountAllow) != 0 {
		t.Fatalf("an agent changed what the engine enforces: %+v %+v", p, s)
	}
	if code, body := do(t, base, call{method: "GET", path: "/api/sandbox/schedules"}); code != 200 || len(body["schedules"].([]any)) != 1 {
		t.Fatalf("a host schedule was made: %v", body)
	}
	if code, body := do(t, base, call{method: "GET", path: sch}); code != 200 || body["cron"] != "@daily" || body["code"] != "echo owner" {
		t.Fatalf("the owner's schedule changed: %v", body)
	}
	// What the tools do, inside the policy, it may.
	if code, body := doAs(t, base, iss.Secret, call{method: "POST", path: "/api/sandbox/run-once", body: map[string]any{"command": "echo agent", "backend": "direct"}}); code != 200 || !strings.Contains(body["stdout"].(string), "agent") {
		t.Fatalf("an agent's run: %d %v", code, body)
	}
	if code, body := doAs(t, base, iss.Secret, call{method: "GET", path: "/api/sandbox/settings"}); code != 200 || body["defaultCpus"] == nil {
		t.Fatalf("an agent reads the settings: %d %v", code, body)
	}
}

func samePolicy(a, b app.ExecPolicy) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestATokenOverTheSocketIsNotTheOwner: over the owner's socket a
// request with a token is that token's principal, and a token the
// engine does not know is refused, never taken for the owner.
func TestATokenOverTheSocketIsNotTheOwner(t *testing.T) {
	t.Parallel()
	s, _, reg, _ := principalServer(t)
	iss, err := reg.Add("bot", "agent", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	send := func(tok string) (int, string) {
		req, _ := http.NewRequest("PUT", "http://senclaw/api/sandbox/exec-policy", strings.NewReader(`{"runPython": false}`))
		req = req.WithContext(WithTransport(context.Background(), "socket", nil))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := &recorder{header: http.Header{}}
		s.ServeHTTP(w, req)
		return w.code, w.body.String()
	}
	if code, body := send(iss.Secret); code != 403 || !strings.Contains(body, "policy:write") {
		t.Fatalf("an agent token over the socket: %d %s", code, body)
	}
	if code, body := send("sclw_nope_nope"); code != 401 {
		t.Fatalf("an unknown token over the socket: %d %s", code, body)
	}
	if code, body := send(""); code != 200 {
		t.Fatalf("the owner over the socket: %d %s", code, body)
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(c int) {
	if r.code == 0 {
		r.code = c
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(200)
	return r.body.Write(p)
}

var _ io.Writer = (*recorder)(nil)

// TestTheToolPolicyOverREST: the operations of a tool the policy leaves
// out answer 403 naming the tool, before anything happens; the routes
// every holder of a scope may use (status, whoami) stay open.
func TestTheToolPolicyOverREST(t *testing.T) {
	t.Parallel()
	_, e, reg, base := principalServer(t)
	iss, err := reg.Add("runner", "agent", "", []string{"sbx_run"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    call
		tool string
	}{
		{call{method: "POST", path: "/api/sandbox/sandboxes", body: map[string]any{"name": "x"}}, "sbx_create"},
		{call{method: "GET", path: "/api/sandbox/sandboxes"}, "sbx_list"},
		{call{method: "GET", path: "/api/sandbox/runs"}, "sbx_runs"},
		{call{method: "GET", path: "/api/sandbox/schedules"}, "schedules"},
		{call{method: "POST", path: "/api/sandbox/agent-shell/check", body: map[string]any{"projectDir": "/tmp"}}, "agent_shell"},
	} {
		code, body := doAs(t, base, iss.Secret, tc.c)
		if code != 403 || body["tool"] != tc.tool || !strings.Contains(body["error"].(string), tc.tool+" is not in the tool policy") {
			t.Errorf("%s %s: %d %v, want 403 naming %s", tc.c.method, tc.c.path, code, body, tc.tool)
		}
	}
	if all, _ := e.List(); len(all) != 0 {
		t.Fatalf("a refused create made %v", all)
	}
	for _, path := range []string{"/api/sandbox/status", "/api/sandbox/whoami"} {
		if code, body := doAs(t, base, iss.Secret, call{method: "GET", path: path}); code != 200 {
			t.Errorf("%s: %d %v", path, code, body)
		}
	}
	if code, body := doAs(t, base, iss.Secret, call{method: "POST", path: "/api/sandbox/run-once", body: map[string]any{"command": "echo in-policy", "backend": "direct"}}); code != 200 {
		t.Fatalf("run-once, in the policy: %d %v", code, body)
	}
}

// TestEveryRefusalIsASecurityEvent: a scope refusal, a tool policy
// refusal, an MCP face's question for a tool it may not call, and tokens
// nobody has (over TCP and the socket) are each recorded with who, how,
// the request's first 200 characters and why; the owner lists and
// follows them, filtered; an agent may not read them.
func TestEveryRefusalIsASecurityEvent(t *testing.T) {
	t.Parallel()
	s, _, reg, base := principalServer(t)
	iss, err := reg.Add("bot", "agent", "", []string{"sbx_run"})
	if err != nil {
		t.Fatal(err)
	}
	follow, err := http.NewRequest("GET", base+"/api/sandbox/security-events?follow=1&limit=1&kind=security.token", nil)
	if err != nil {
		t.Fatal(err)
	}
	follow.Header.Set("Authorization", "Bearer "+testToken)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := http.DefaultClient.Do(follow.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("follow: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan map[string]any, 8)
	go func() {
		dec := json.NewDecoder(resp.Body)
		for {
			var ev map[string]any
			if dec.Decode(&ev) != nil {
				close(lines)
				return
			}
			lines <- ev
		}
	}()

	long := "/api/sandbox/exec-policy?x=" + strings.Repeat("a", 400)
	doAs(t, base, iss.Secret, call{method: "PUT", path: long, body: map[string]any{"runPython": false}})
	doAs(t, base, iss.Secret, call{method: "GET", path: "/api/sandbox/sandboxes"})
	doAs(t, base, iss.Secret, call{method: "GET", path: "/api/sandbox/whoami?tool=sbx_exec"})
	doAs(t, base, "sclw_nothing_here", call{method: "GET", path: "/api/sandbox/status"})
	req, _ := http.NewRequest("GET", "http://senclaw/api/sandbox/status", nil)
	req = req.WithContext(WithTransport(context.Background(), "socket", nil))
	req.Header.Set("Authorization", "Bearer wrong")
	s.ServeHTTP(&recorder{header: http.Header{}}, req)

	code, page := do(t, base, call{method: "GET", path: "/api/sandbox/security-events?limit=10"})
	events, _ := page["events"].([]any)
	if code != 200 || len(events) != 5 {
		t.Fatalf("the events: %d %v", code, page)
	}
	want := []struct{ kind, principal, source, request string }{
		{"security.token_rejected", "", "socket", "GET /api/sandbox/status"},
		{"security.token_rejected", "", "tcp", "GET /api/sandbox/status"},
		{"security.tool_policy_denied", "agent:bot", "tcp", "GET /api/sandbox/whoami?tool=sbx_exec"},
		{"security.tool_policy_denied", "agent:bot", "tcp", "GET /api/sandbox/sandboxes"},
		{"security.scope_denied", "agent:bot", "tcp", "PUT /api/sandbox/exec-policy?x=aaa"},
	}
	for i, w := range want {
		ev := events[i].(map[string]any)
		if ev["kind"] != w.kind || ev["principal"] != w.principal || ev["source"] != w.source ||
			!strings.HasPrefix(ev["request"].(string), w.request) || ev["reason"] == "" {
			t.Errorf("event %d: %v, want %+v", i, ev, w)
		}
		if n := len([]rune(ev["request"].(string))); n > 200 {
			t.Errorf("event %d keeps %d characters of the request", i, n)
		}
	}
	if code, page := do(t, base, call{method: "GET", path: "/api/sandbox/security-events?principal=agent:&kind=security.tool"}); code != 200 || len(page["events"].([]any)) != 2 {
		t.Errorf("filtered: %d %v", code, page)
	}
	if code, _ := doAs(t, base, iss.Secret, call{method: "GET", path: "/api/sandbox/security-events"}); code != 403 {
		t.Errorf("an agent reading the security events: %d", code)
	}
	seen := 0
	timeout := time.After(5 * time.Second)
	for seen < 2 {
		select {
		case ev, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			if !strings.HasPrefix(ev["kind"].(string), "security.token") {
				t.Errorf("followed an event the filter leaves out: %v", ev)
			}
			seen++
		case <-timeout:
			t.Fatalf("followed %d token events, want 2", seen)
		}
	}
}

// TestTenantsAreTheOwners: the owner makes, lists, changes and removes
// tenants; the first token of one is shown once and acts as it; an agent
// or a tenant may not touch them.
func TestTenantsAreTheOwners(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	reg, err := tokens.New(tokens.Options{Docs: e.TokenDocs()})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := tenants.New(tenants.Options{Engine: e, Docs: e.TenantDocs(), Tokens: reg})
	if err != nil {
		t.Fatal(err)
	}
	_, base := tcpServer(t, New(Options{Engine: e, Token: testToken, Tokens: reg, Tenants: dir}))
	code, body := do(t, base, call{method: "POST", path: "/api/sandbox/tenants", body: map[string]any{"name": "acme", "quota": map[string]any{"sandboxes": 3, "runs": 1, "diskMb": 50}}})
	if code != 201 {
		t.Fatalf("add: %d %v", code, body)
	}
	secret := body["token"].(map[string]any)["secret"].(string)
	ten := body["tenant"].(map[string]any)
	if ten["dir"] != e.TenantDir("acme") || strings.Join(toStrings(ten["tools"]), ",") != "sbx_capabilities,sbx_events,sbx_run,sbx_runs" {
		t.Fatalf("the new tenant: %v", ten)
	}
	for _, sub := range []string{"workspace", "runtime"} {
		if fi, err := os.Stat(filepath.Join(e.TenantDir("acme"), sub)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("the tenant's %s: %v %v", sub, fi, err)
		}
	}
	if code, who := doAs(t, base, secret, call{method: "GET", path: "/api/sandbox/whoami"}); code != 200 || who["kind"] != "tenant" || who["tenant"] != "acme" {
		t.Fatalf("whoami as the tenant: %d %v", code, who)
	}
	// /status tells the owner where the data lives and which process the
	// engine is; a tenant learns neither.
	if code, st := do(t, base, call{method: "GET", path: "/api/sandbox/status"}); code != 200 || st["dataDir"] != e.DataDir() || st["pid"] != float64(os.Getpid()) {
		t.Fatalf("status as the owner: %d %v", code, st)
	}
	if code, st := doAs(t, base, secret, call{method: "GET", path: "/api/sandbox/status"}); code != 200 || st["dataDir"] != nil || st["pid"] != nil {
		t.Fatalf("status as the tenant: %d %v", code, st)
	}
	if code, _ := do(t, base, call{method: "POST", path: "/api/sandbox/tenants", body: map[string]any{"name": "acme"}}); code != 409 {
		t.Fatalf("a second acme: %d", code)
	}
	if code, body := do(t, base, call{method: "GET", path: "/api/sandbox/tenants"}); code != 200 || len(body["tenants"].([]any)) != 1 {
		t.Fatalf("list: %d %v", code, body)
	}
	if code, body := do(t, base, call{method: "PATCH", path: "/api/sandbox/tenants/acme", body: map[string]any{"tools": nil, "paths": []string{"/etc"}}}); code != 400 || !strings.Contains(body["error"].(string), "paths[0]") {
		t.Fatalf("granting /etc: %d %v", code, body)
	}
	if code, body := do(t, base, call{method: "PATCH", path: "/api/sandbox/tenants/acme", body: map[string]any{"tools": nil}}); code != 200 || body["tools"] != nil {
		t.Fatalf("patch: %d %v", code, body)
	}
	if code, body := do(t, base, call{method: "GET", path: "/api/sandbox/tenants/acme"}); code != 200 || body["tokens"] != float64(1) {
		t.Fatalf("get: %d %v", code, body)
	}
	for _, c := range []call{
		{method: "GET", path: "/api/sandbox/tenants"},
		{method: "POST", path: "/api/sandbox/tenants", body: map[string]any{"name": "mine"}},
		{method: "PATCH", path: "/api/sandbox/tenants/acme", body: map[string]any{"quota": map[string]any{"sandboxes": 1000}}},
		{method: "DELETE", path: "/api/sandbox/tenants/acme"},
	} {
		if code, body := doAs(t, base, secret, c); code != 403 || body["scope"] != "tenants:admin" {
			t.Errorf("%s %s as the tenant: %d %v", c.method, c.path, code, body)
		}
	}
	if code, body := do(t, base, call{method: "DELETE", path: "/api/sandbox/tenants/acme?purge=true"}); code != 200 || body["files"] != "purged" {
		t.Fatalf("delete: %d %v", code, body)
	}
	if code, _ := doAs(t, base, secret, call{method: "GET", path: "/api/sandbox/whoami"}); code != 401 {
		t.Fatalf("a removed tenant's token: %d", code)
	}
	if _, err := os.Stat(e.TenantDir("acme")); !os.IsNotExist(err) {
		t.Fatalf("the purged directory: %v", err)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestAgentsAndTenantsNeverHoldTheOwnersPower: against a real engine
// (bwrap) with its Space Apps, tokens, tenants and scheduler, an agent's
// token and a tenant's token are each refused every operation that
// changes what the engine enforces (the policy, any setting, schedules
// that run on the host, unsandboxed Space Apps, tokens, tenants, the
// daemon), 403 with the scope named, before anything happens.
func TestAgentsAndTenantsNeverHoldTheOwnersPower(t *testing.T) {
	_, e, apps := spaceServer(t)
	reg, err := tokens.New(tokens.Options{Docs: e.TokenDocs()})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := tenants.New(tenants.Options{Engine: e, Docs: e.TenantDocs(), Tokens: reg})
	if err != nil {
		t.Fatal(err)
	}
	sched := testScheduler(t, e)
	_, base := tcpServer(t, New(Options{Engine: e, Apps: apps, Token: testToken, Tokens: reg, Tenants: dir, Scheduler: sched}))
	agent, err := reg.Add("bot", "agent", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	added, err := dir.Add("acme", tenants.Spec{AllTools: true})
	if err != nil {
		t.Fatal(err)
	}
	// A sandboxed app of the owner's, which no one else may unconfine.
	owned := appDir(t, `{"id": "owned", "name": "owned", "runtime": {"start": "python3 -m http.server $PORT"}}`, map[string]string{})
	if code, body := do(t, base, call{method: "POST", path: "/api/space/apps", body: map[string]any{"dir": owned}}); code != 201 {
		t.Fatalf("the owner's app: %d %v", code, body)
	}
	unconfined := `{"id": "bare", "name": "bare", "runtime": {"start": "python3 -m http.server $PORT"}, "sandbox": {"enabled": false}}`
	bareDirs := map[string]string{"agent": appDir(t, unconfined, map[string]string{}), "tenant": filepath.Join(e.TenantDir("acme"), "workspace", "bare")}
	os.MkdirAll(bareDirs["tenant"], 0o755)
	os.WriteFile(filepath.Join(bareDirs["tenant"], "senclaw-app.json"), []byte(unconfined), 0o644)
	for who, tok := range map[string]string{"agent": agent.Secret, "tenant": added.Token.Secret} {
		bare := bareDirs[who]
		policy, settings := e.Policy(), e.Settings()
		for _, tc := range []struct {
			c     call
			scope string
		}{
			{call{method: "PUT", path: "/api/sandbox/exec-policy", body: map[string]any{"runPython": false}}, "policy:write"},
			{call{method: "PUT", path: "/api/sandbox/settings", body: map[string]any{"allowDirect": true}}, "settings:write"},
			{call{method: "PUT", path: "/api/sandbox/settings", body: map[string]any{"defaultPids": 999}}, "settings:write"},
			{call{method: "POST", path: "/api/sandbox/schedules", body: map[string]any{"name": "x", "cron": "@hourly", "code": "id"}}, "schedules:host"},
			{call{method: "POST", path: "/api/space/apps", body: map[string]any{"dir": bare}}, "apps:unsandboxed"},
			{call{method: "POST", path: "/api/sandbox/tokens", body: map[string]any{"name": "more"}}, "tokens:admin"},
			{call{method: "DELETE", path: "/api/sandbox/tokens/bot"}, "tokens:admin"},
			{call{method: "POST", path: "/api/sandbox/tenants", body: map[string]any{"name": "mine"}}, "tenants:admin"},
			{call{method: "PATCH", path: "/api/sandbox/tenants/acme", body: map[string]any{"tools": nil}}, "tenants:admin"},
			{call{method: "GET", path: "/api/sandbox/security-events"}, "security:read"},
			{call{method: "POST", path: "/api/sandbox/daemon/stop"}, "daemon:admin"},
		} {
			code, body := doAs(t, base, tok, tc.c)
			if code != 403 || body["scope"] != tc.scope || !strings.Contains(fmt.Sprint(body["error"]), tc.scope) {
				t.Errorf("%s: %s %s: %d %v, want 403 naming %s", who, tc.c.method, tc.c.path, code, body, tc.scope)
			}
		}
		if who == "agent" {
			// The owner's own app, which the agent sees (the owner's
			// tenant), stays sandboxed.
			if code, body := doAs(t, base, tok, call{method: "PUT", path: "/api/space/apps/owned/sandbox", body: map[string]any{"enabled": false}}); code != 403 || body["scope"] != "apps:unsandboxed" {
				t.Errorf("agent: unconfining the owner's app: %d %v", code, body)
			}
		}
		if p, s := e.Policy(), e.Settings(); !samePolicy(p, policy) || s.AllowDirect != settings.AllowDirect || s.DefaultPids != settings.DefaultPids {
			t.Fatalf("%s changed what the engine enforces", who)
		}
	}
	if code, body := do(t, base, call{method: "GET", path: "/api/space/apps"}); code != 200 || len(body["apps"].([]any)) != 1 {
		t.Errorf("apps after the refusals: %v", body)
	}
}
