package mcp_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/tenants"
	"github.com/senclaw/sandbox/internal/testutil"
)

func listed(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestTheToolPolicyOverMCP drives an agent token with a tool policy
// through /mcp with the official SDK client: tools/list shows only what
// the policy allows, a call of any other tool is a tool error naming the
// tool and the policy before anything runs, a change of the policy
// applies to the session at once, and the owner sees every tool.
func TestTheToolPolicyOverMCP(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, nil)
	iss, err := d.tokens.Add("limited", principal.Agent, "", []string{"sbx_capabilities", "sbx_run", "sbx_runs"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectHTTPAs(t, d, iss.Secret, nil)
	if got := listed(t, cs); strings.Join(got, ",") != "sbx_capabilities,sbx_run,sbx_runs" {
		t.Fatalf("tools/list with the policy: %v", got)
	}
	for _, name := range []string{"sbx_create", "sbx_exec", "sbx_settings"} {
		r := callTool(t, cs, name, map[string]any{"sandboxId": "x", "command": "touch /tmp/ran"})
		if !r.isErr || !strings.Contains(r.text, name+" is not in the tool policy of agent \"limited\"") || !strings.Contains(r.text, "sbx_capabilities, sbx_run, sbx_runs") {
			t.Errorf("%s outside the policy: %v %q", name, r.isErr, r.text)
		}
	}
	if all, err := d.socket.Sandboxes(context.Background()); err != nil || len(all) != 0 {
		t.Fatalf("a refused sbx_create made a sandbox: %v %v", all, err)
	}
	if r := callTool(t, cs, "sbx_run", map[string]any{"language": "bash", "code": "echo allowed"}); r.isErr || !strings.Contains(r.text, "allowed") {
		t.Fatalf("sbx_run inside the policy: %q", r.text)
	}
	if _, err := d.tokens.SetTools("limited", []string{"sbx_run", "sbx_list"}); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, cs); strings.Join(got, ",") != "sbx_list,sbx_run" {
		t.Fatalf("tools/list after the policy changed: %v", got)
	}
	if r := callTool(t, cs, "sbx_runs", nil); !r.isErr {
		t.Fatalf("sbx_runs, out of the policy now: %q", r.text)
	}
	ocs := connectHTTP(t, d, nil)
	owner := listed(t, ocs)
	if r := callTool(t, ocs, "sbx_policy_check", map[string]any{"command": "true"}); r.isErr || !strings.Contains(r.text, `"values"`) || !strings.Contains(r.text, `"fsMode"`) {
		t.Fatalf("the owner's sbx_policy_check: %q", r.text)
	}
	project := testutil.SandboxDir(t, "senclaw-learn-")
	os.Chmod(project, 0o777)
	if r := callTool(t, ocs, "sbx_run", map[string]any{"learn": true, "projectDir": project, "command": "echo learned"}); r.isErr || !strings.Contains(r.text, "proposed for "+project) || !strings.Contains(r.text, `+ fsMode: "strict"`) {
		t.Fatalf("the owner's sbx_run learn: %q", r.text)
	}
	if len(owner) != len(toolNames)+2 || !slices.Contains(owner, "sbx_security_events") || !slices.Contains(owner, "sbx_policy_check") {
		t.Fatalf("the owner's tools: %v", owner)
	}
	// The stdio server's way: a client of the socket with the token.
	stdio := connect(t, d.socket.WithToken(iss.Secret))
	if got := listed(t, stdio); strings.Join(got, ",") != "sbx_list,sbx_run" {
		t.Fatalf("tools/list over the socket with the token: %v", got)
	}
}

// TestAgentsAndTenantsChangeNothingOverMCP: over /mcp with the official
// SDK client, an agent's and a tenant's token (every tool allowed) may
// read the settings but not change any, are never offered the owner's
// tool and are refused it by name, and the engine is as it was.
func TestAgentsAndTenantsChangeNothingOverMCP(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, nil)
	agent, err := d.tokens.Add("bot", principal.Agent, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	added, err := d.tenants.Add("acme", tenants.Spec{AllTools: true})
	if err != nil {
		t.Fatal(err)
	}
	before := d.engine.Settings()
	for who, tok := range map[string]string{"agent": agent.Secret, "tenant": added.Token.Secret} {
		cs := connectHTTPAs(t, d, tok, nil)
		names := listed(t, cs)
		if slices.Contains(names, "sbx_security_events") || slices.Contains(names, "sbx_policy_check") || len(names) != len(toolNames) {
			t.Errorf("%s is offered %v", who, names)
		}
		if r := callTool(t, cs, "sbx_settings", nil); r.isErr {
			t.Errorf("%s reading the settings: %q", who, r.text)
		}
		for _, args := range []map[string]any{{"defaultPids": 999}, {"defaultFsMode": "open"}, {"allowlist": []string{"/"}}} {
			if r := callTool(t, cs, "sbx_settings", args); !r.isErr || !strings.Contains(r.text, "settings:write") {
				t.Errorf("%s: sbx_settings %v: %v %q, want a refusal naming settings:write", who, args, r.isErr, r.text)
			}
		}
		if r := callTool(t, cs, "sbx_security_events", nil); !r.isErr || !strings.Contains(r.text, "security:read") {
			t.Errorf("%s: sbx_security_events: %q", who, r.text)
		}
		if r := callTool(t, cs, "sbx_policy_check", map[string]any{"command": "true"}); !r.isErr || !strings.Contains(r.text, "policy:write") {
			t.Errorf("%s: sbx_policy_check: %q", who, r.text)
		}
		if r := callTool(t, cs, "sbx_run", map[string]any{"learn": true, "projectDir": "/tmp", "command": "true"}); !r.isErr || !strings.Contains(r.text, "policy:write") {
			t.Errorf("%s: sbx_run learn: %q", who, r.text)
		}
	}
	after := d.engine.Settings()
	if after.DefaultPids != before.DefaultPids || after.DefaultFsMode != before.DefaultFsMode || len(after.Allowlist) != len(before.Allowlist) {
		t.Fatalf("the settings changed: %+v", after)
	}
}
