package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/client"
)

// toolText is the text of a tool call's answer, and whether it is an
// error.
func toolText(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error(), true
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestTheStdioMCPServerIsAnAgent: `senclaw sandbox-server` acts with an
// agent token the owner's CLI made for it, not with the owner's socket:
// neither its tools nor a request crafted with its own socket identity
// change the policy or the settings, and its runs are recorded as the
// agent's.
func TestTheStdioMCPServerIsAnAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	policy, _ := d.c.Policy(ctx)
	settings, _ := d.c.Settings(ctx)

	server := exec.Command(d.bin, "sandbox-server")
	server.Env = d.env
	var serverErr strings.Builder
	server.Stderr = &serverErr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "principals-test", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, serverErr.String())
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "sbx_security_events" {
			t.Errorf("an agent is offered the owner's tool %s", tool.Name)
		}
	}
	for _, args := range []map[string]any{{"allowDirect": true}, {"AllowDirect": true}, {"defaultCpus": 2}, {"mountAllow": []string{"/"}}, {"allowlist": []string{"/etc"}}} {
		if text, isErr := toolText(t, cs, "sbx_settings", args); !isErr {
			t.Errorf("sbx_settings %v as the stdio server: not refused: %s", args, text)
		}
	}
	if text, isErr := toolText(t, cs, "sbx_settings", map[string]any{"defaultCpus": 2}); !strings.Contains(text, "settings:write") {
		t.Errorf("sbx_settings defaultCpus: %v %s, want the scope named", isErr, text)
	}
	if text, isErr := toolText(t, cs, "sbx_run", map[string]any{"command": "echo from-the-agent"}); isErr || !strings.Contains(text, "from-the-agent") {
		t.Fatalf("sbx_run: %s\n%s", text, serverErr.String())
	}
	if r := d.lastRun(t); r.Principal != "agent:sandbox-server" || r.Source != "mcp" {
		t.Errorf("the run's record: principal %q source %q, want agent:sandbox-server and mcp", r.Principal, r.Source)
	}

	// The token it acts with is an agent's: crafted straight onto the
	// engine's socket, the owner's operations are refused with it.
	data, err := os.ReadFile(filepath.Join(d.root, "config", "senclaw", "agent-tokens", "sandbox-server"))
	if err != nil {
		t.Fatalf("the face's token: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(d.root, "config", "senclaw", "agent-tokens", "sandbox-server")); fi.Mode().Perm() != 0o600 {
		t.Errorf("the face's token is %v", fi.Mode())
	}
	agent := d.c.WithToken(strings.TrimSpace(string(data)))
	for _, crafted := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/exec-policy", map[string]any{"execShell": false, "runPython": false}},
		{"PUT", "/settings", map[string]any{"allowDirect": true}},
		{"POST", "/schedules", map[string]any{"name": "x", "cron": "@hourly", "code": "id"}},
		{"POST", "/tokens", map[string]any{"name": "escalate"}},
	} {
		err := agent.Do(ctx, crafted.method, crafted.path, nil, crafted.body, nil)
		var ce *client.Error
		if !asClientError(err, &ce) || ce.Status != 403 {
			t.Errorf("%s %s with the stdio server's token: %v, want 403", crafted.method, crafted.path, err)
		}
	}
	// And a raw JSON-RPC line on its stdin that no client library would
	// send: a tools/call of sbx_settings with the protected names in
	// every spelling, plus an unknown method.
	raw := exec.Command(d.bin, "sandbox-server")
	raw.Env = d.env
	stdin, _ := raw.StdinPipe()
	stdout, _ := raw.StdoutPipe()
	if err := raw.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); raw.Wait() }()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(msg string) string {
		fmt.Fprintln(stdin, msg)
		if !lines.Scan() {
			t.Fatalf("no answer to %s", msg)
		}
		return lines.Text()
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, args := range []string{`{"ALLOWDIRECT":true}`, `{"defaultCpus":2,"allowDirect":true}`, `{"execShell":false}`, `{"defaultFsMode":"open"}`} {
		answer := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sbx_settings","arguments":%s}}`, 10+i, args))
		if !strings.Contains(answer, `"isError":true`) && !strings.Contains(answer, `"error"`) {
			t.Errorf("crafted sbx_settings %s: %s", args, answer)
		}
	}
	if answer := send(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"sbx_security_events","arguments":{}}}`); !strings.Contains(answer, `"isError":true`) || !strings.Contains(answer, "security:read") {
		t.Errorf("the owner's tool from the stdio server: %s", answer)
	}
	if p, _ := d.c.Policy(ctx); p.RunPython != policy.RunPython || p.ExecShell != policy.ExecShell {
		t.Errorf("the policy changed: %+v", p)
	}
	if s, _ := d.c.Settings(ctx); s.AllowDirect != settings.AllowDirect || s.DefaultCPUs != settings.DefaultCPUs || s.DefaultFsMode != settings.DefaultFsMode {
		t.Errorf("the settings changed: %+v", s)
	}
}

func asClientError(err error, ce **client.Error) bool {
	if err == nil {
		return false
	}
	e, ok := err.(*client.Error)
	*ce = e
	return ok
}

// TestTheHooksAndTheAgentShellActAsAgents: a hook call and the command
// it hands to the agent shell reach the engine with the agent shell's
// token of that agent; the run is recorded as the agent's.
func TestTheHooksAndTheAgentShellActAsAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	project := d.dir(t, "project")
	answer := d.hook(t, "claude-code", map[string]any{"hook_event_name": "PreToolUse", "cwd": project, "tool_name": "Bash", "tool_input": map[string]any{"command": "echo hooked"}})
	out, _ := json.Marshal(answer)
	if !strings.Contains(string(out), "agent-shell") {
		t.Fatalf("the hook's answer: %s", out)
	}
	cmd := exec.Command(d.bin, "agent-shell", "--agent", "claude-code", "--project", project, "-c", "echo hooked")
	cmd.Env, cmd.Dir = d.env, project
	if got, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(got), "hooked") {
		t.Fatalf("agent-shell: %v %s", err, got)
	}
	if r := d.lastRun(t); r.Principal != "agent:agent-shell:claude-code" || r.Agent != "claude-code" {
		t.Errorf("the run's record: principal %q agent %q", r.Principal, r.Agent)
	}
	toks, err := d.c.Tokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tok := range toks {
		names = append(names, tok.Name+"/"+string(tok.Kind))
	}
	if strings.Join(names, ",") != "agent-shell:claude-code/agent" {
		t.Errorf("tokens: %v, want the one agent token of the claude-code agent shell (made once, for the hook and the command)", names)
	}
}

// cli runs the built senclaw against d with extra environment, returning
// the exit code, stdout and stderr.
func (d *testDaemon) cli(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(d.bin, args...)
	cmd.Env = append(append([]string{}, d.env...), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// TestThePrincipalsVerbs drives senclaw tokens, tenants and
// security-events against a real daemon: a secret is printed once and
// never listed; SENCLAW_TOKEN makes the CLI that token's principal,
// refused the owner's operations; rotate ends the old secret; a tenant
// sees its own; the refusals are listed and followed.
func TestThePrincipalsVerbs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	code, secret, errOut := d.cli(t, nil, "tokens", "add", "--tools", "sbx_run,sbx_runs,sbx_capabilities", "ci-bot")
	secret = strings.TrimSpace(secret)
	if code != 0 || !strings.HasPrefix(secret, "sclw_") || !strings.Contains(errOut, "shown this once") {
		t.Fatalf("tokens add: %d %q %q", code, secret, errOut)
	}
	if code, out, _ := d.cli(t, nil, "tokens", "ls"); code != 0 || !strings.Contains(out, "ci-bot") || !strings.Contains(out, "sbx_run,sbx_runs") || strings.Contains(out, secret) {
		t.Errorf("tokens ls: %d %s", code, out)
	}
	bot := []string{"SENCLAW_TOKEN=" + secret}
	if code, _, errOut := d.cli(t, bot, "policy", "--python", "off"); code == 0 || !strings.Contains(errOut, "policy:write") {
		t.Errorf("the bot changing the policy: %d %s", code, errOut)
	}
	if code, _, errOut := d.cli(t, bot, "ls"); code == 0 || !strings.Contains(errOut, "sbx_list is not in the tool policy") {
		t.Errorf("the bot listing sandboxes: %d %s", code, errOut)
	}
	if code, out, _ := d.cli(t, bot, "run", "--", "echo", "as-the-bot"); code != 0 || out != "as-the-bot\n" {
		t.Errorf("the bot's run: %d %q", code, out)
	}
	code, next, _ := d.cli(t, nil, "tokens", "rotate", "ci-bot")
	if next = strings.TrimSpace(next); code != 0 || next == secret {
		t.Fatalf("tokens rotate: %d %q", code, next)
	}
	if code, _, errOut := d.cli(t, bot, "caps"); code == 0 || !strings.Contains(errOut, "not one the engine knows") {
		t.Errorf("the rotated-out secret: %d %s", code, errOut)
	}
	if code, out, _ := d.cli(t, nil, "tokens", "set", "--tools", "all", "ci-bot"); code != 0 || !strings.Contains(out, "may call: all") {
		t.Errorf("tokens set: %d %s", code, out)
	}

	code, tenantTok, _ := d.cli(t, nil, "tenants", "add", "--runs", "2", "--tools", "all", "acme")
	tenantTok = strings.TrimSpace(tenantTok)
	if code != 0 || !strings.HasPrefix(tenantTok, "sclw_") {
		t.Fatalf("tenants add: %d %q", code, tenantTok)
	}
	if code, out, _ := d.cli(t, nil, "tenants", "ls"); code != 0 || !strings.Contains(out, "acme") || !strings.Contains(out, "tenants/acme") {
		t.Errorf("tenants ls: %d %s", code, out)
	}
	if code, out, _ := d.cli(t, nil, "tenants", "set", "--sandboxes", "3", "acme"); code != 0 || !strings.Contains(out, "3 sandboxes") {
		t.Errorf("tenants set: %d %s", code, out)
	}
	acme := []string{"SENCLAW_TOKEN=" + tenantTok}
	// An agent token of the tenant acts for it: its objects, its policy.
	code, ideTok, _ := d.cli(t, nil, "tokens", "add", "--tenant", "acme", "acme-ide")
	if w, err := d.c.WithToken(strings.TrimSpace(ideTok)).Whoami(context.Background(), ""); code != 0 || err != nil || w.Kind != "agent" || w.Tenant != "acme" {
		t.Errorf("tokens add --tenant acme: %d %+v %v", code, w, err)
	}
	if code, out, _ := d.cli(t, nil, "tokens", "ls"); code != 0 || !regexp.MustCompile(`acme-ide\s+agent\s+acme`).MatchString(out) {
		t.Errorf("tokens ls, the tenant's agent token: %d %s", code, out)
	}
	d.cli(t, nil, "create", "--name", "the-owners")
	if code, out, _ := d.cli(t, acme, "create", "--name", "acmes"); code != 0 || out == "" {
		t.Fatalf("acme's create: %d %s", code, out)
	}
	if code, out, _ := d.cli(t, acme, "ls"); code != 0 || !strings.Contains(out, "acmes") || strings.Contains(out, "the-owners") {
		t.Errorf("acme's ls: %d %s", code, out)
	}

	if code, out, _ := d.cli(t, nil, "security-events", "--principal", "agent:ci-bot"); code != 0 || !strings.Contains(out, "scope_denied") || !strings.Contains(out, "tool_policy_denied") {
		t.Errorf("security-events: %d %s", code, out)
	}
	if code, out, _ := d.cli(t, nil, "security-events", "--kind", "security.token_rejected", "--json"); code != 0 || !strings.HasPrefix(out, `{"id":"e`) {
		t.Errorf("security-events --json: %d %s", code, out)
	}
	if code, _, errOut := d.cli(t, acme, "security-events"); code == 0 || !strings.Contains(errOut, "security:read") {
		t.Errorf("a tenant reading the security events: %d %s", code, errOut)
	}
	follow := exec.Command(d.bin, "security-events", "--follow", "--limit", "1", "--kind", "security.scope_denied", "--json")
	follow.Env = d.env
	stdout, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { follow.Process.Kill(); follow.Wait() }()
	lines := bufio.NewScanner(stdout)
	lines.Scan() // the last one recorded
	d.cli(t, acme, "settings", "set", "defaultPids=300")
	got := make(chan string, 1)
	go func() {
		if lines.Scan() {
			got <- lines.Text()
		}
	}()
	select {
	case line := <-got:
		if !strings.Contains(line, `"principal":"tenant:acme"`) || !strings.Contains(line, "settings:write") {
			t.Errorf("the followed event: %s", line)
		}
	case <-time.After(10 * time.Second):
		t.Error("security-events --follow printed nothing for a new refusal")
	}
	if code, out, _ := d.cli(t, nil, "tenants", "rm", "--purge", "acme"); code != 0 || !strings.Contains(out, "removed tenant acme") {
		t.Errorf("tenants rm: %d %s", code, out)
	}
	if code, _, _ := d.cli(t, acme, "ls"); code == 0 {
		t.Error("a removed tenant's token still works")
	}
	if code, _, _ := d.cli(t, []string{"SENCLAW_TOKEN=" + strings.TrimSpace(ideTok)}, "caps"); code == 0 {
		t.Error("an agent token of a removed tenant still works")
	}
	if code, out, _ := d.cli(t, nil, "tokens", "rm", "ci-bot"); code != 0 || !strings.Contains(out, "removed ci-bot") {
		t.Errorf("tokens rm: %d %s", code, out)
	}
}

// TestTheStdioMCPServerActsForATenant: `senclaw sandbox-server --tenant
// NAME` acts as an agent of that tenant, with an agent token of its own
// the owner's CLI makes: its tools/list is the tenant's tool policy, a
// tool outside it is refused by name, its runs are the tenant's, and the
// owner's objects are not its to see. `senclaw mcp-config --tenant NAME`
// hands a client such a token; a tenant nobody made is refused.
func TestTheStdioMCPServerActsForATenant(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if code, _, errOut := d.cli(t, nil, "tenants", "add", "acme"); code != 0 {
		t.Fatalf("tenants add: %d %s", code, errOut)
	}
	if code, _, errOut := d.cli(t, nil, "create", "--name", "the-owners"); code != 0 {
		t.Fatalf("the owner's sandbox: %d %s", code, errOut)
	}

	server := exec.Command(d.bin, "sandbox-server", "--tenant", "acme")
	server.Env = d.env
	var serverErr strings.Builder
	server.Stderr = &serverErr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "tenant-test", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, serverErr.String())
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := "sbx_capabilities,sbx_events,sbx_run,sbx_runs"; strings.Join(names, ",") != want {
		t.Errorf("tools/list of a new tenant's agent: %v, want %s (the default tenant policy)", names, want)
	}
	if text, isErr := toolText(t, cs, "sbx_list", nil); !isErr || !strings.Contains(text, "sbx_list is not in the tool policy") {
		t.Errorf("sbx_list outside the tenant's policy: %v %s", isErr, text)
	}
	if text, isErr := toolText(t, cs, "sbx_run", map[string]any{"command": "echo for-acme"}); isErr || !strings.Contains(text, "for-acme") {
		t.Fatalf("sbx_run: %s\n%s", text, serverErr.String())
	}
	if r := d.lastRun(t); r.Principal != "agent:sandbox-server:acme" || r.Tenant != "acme" {
		t.Errorf("the run's record: principal %q tenant %q, want agent:sandbox-server:acme of acme", r.Principal, r.Tenant)
	}
	if text, _ := toolText(t, cs, "sbx_runs", nil); strings.Contains(text, "the-owners") {
		t.Errorf("the tenant's agent sees the owner's objects: %s", text)
	}
	toks, err := d.c.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tok := range toks {
		if tok.Name == "sandbox-server:acme" {
			found = tok.Tenant == "acme" && tok.Kind == "agent"
		}
	}
	if !found {
		t.Errorf("tokens: %+v, want the agent token sandbox-server:acme of tenant acme", toks)
	}

	code, out, errOut := d.cli(t, nil, "mcp-config", "--tenant", "acme", "generic")
	var doc struct {
		MCPServers map[string]struct {
			Env map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("mcp-config --tenant: %d %s %s", code, out, errOut)
	}
	w, err := d.c.WithToken(doc.MCPServers["senclaw"].Env["SENCLAW_TOKEN"]).Whoami(ctx, "")
	if err != nil || w.Kind != "agent" || w.Tenant != "acme" || w.Name != "mcp:generic" {
		t.Errorf("mcp-config --tenant acme hands out %+v %v, want the agent mcp:generic of acme", w, err)
	}

	if code, _, errOut := d.cli(t, nil, "mcp-config", "--tenant", "nobody", "cursor"); code == 0 || !strings.Contains(errOut, "nobody") {
		t.Errorf("mcp-config for a tenant nobody made: %d %s", code, errOut)
	}
	nobody := exec.Command(d.bin, "sandbox-server", "--tenant", "nobody")
	nobody.Env = d.env
	nobody.Stdin = strings.NewReader("")
	if got, err := nobody.CombinedOutput(); err == nil || !strings.Contains(string(got), "nobody") {
		t.Errorf("sandbox-server for a tenant nobody made: %v %s", err, got)
	}
}
