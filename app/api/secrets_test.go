package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/tenants"
	"github.com/senclaw/sandbox/app/tokens"
)

// TestSecretsThroughREST: the owner adds, lists, rotates and removes a
// secret; no answer ever holds its value; a sandbox may ask for it by
// name and the list says it does; bad input names the field.
func TestSecretsThroughREST(t *testing.T) {
	t.Parallel()
	_, base := tcpServer(t, New(Options{Engine: testEngine(t), Token: testToken}))
	const value = "s3cr3t-value-of-the-test"
	code, out := do(t, base, call{method: "POST", path: "/api/sandbox/secrets", body: map[string]any{"name": "gh", "hosts": []string{"api.github.com"}, "header": "Authorization", "format": "Bearer {}", "value": value}})
	if code != 201 || out["env"] != "GH" || out["where"] != "store" {
		t.Fatalf("add: %d %v", code, out)
	}
	code, out = do(t, base, call{method: "POST", path: "/api/sandbox/secrets", body: map[string]any{"name": "bad name", "hosts": []string{"x.test"}, "value": "v"}})
	if code != 400 || out["field"] != "name" {
		t.Fatalf("bad name: %d %v", code, out)
	}
	code, out = do(t, base, call{method: "POST", path: "/api/sandbox/sandboxes", body: map[string]any{"name": "uses-gh", "secrets": []string{"gh"}}})
	if code != 201 {
		t.Fatalf("create with a secret: %d %v", code, out)
	}
	code, out = do(t, base, call{method: "POST", path: "/api/sandbox/sandboxes", body: map[string]any{"secrets": []string{"nope"}}})
	if code != 400 || out["field"] != "secrets[0]" {
		t.Fatalf("an unknown secret: %d %v", code, out)
	}
	code, out = do(t, base, call{method: "PUT", path: "/api/sandbox/secrets/gh", body: map[string]any{"value": "rotated-" + value}})
	if code != 200 || out["rotatedAt"] == nil {
		t.Fatalf("rotate: %d %v", code, out)
	}
	code, out = do(t, base, call{method: "GET", path: "/api/sandbox/secrets"})
	b, _ := json.Marshal(out)
	if code != 200 || strings.Contains(string(b), value) || !strings.Contains(string(b), `"usedBy":[{"id"`) || !strings.Contains(string(b), "uses-gh") {
		t.Fatalf("list: %d %s", code, b)
	}
	if code, out = do(t, base, call{method: "DELETE", path: "/api/sandbox/secrets/gh"}); code != 200 || out["removed"] != "gh" {
		t.Fatalf("remove: %d %v", code, out)
	}
	if code, _ = do(t, base, call{method: "DELETE", path: "/api/sandbox/secrets/gh"}); code != 404 {
		t.Fatalf("remove again: %d, want 404", code)
	}
}

// TestSecretsAreTheOwners: only the owner adds, rotates and removes
// secrets (secrets:admin); an agent token of the owner's lists their
// names, to ask for one; a tenant sees none, and its sandboxes are
// refused one.
func TestSecretsAreTheOwners(t *testing.T) {
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
	const value = "the-owners-value-1234"
	if code, body := do(t, base, call{method: "POST", path: "/api/sandbox/secrets", body: map[string]any{"name": "gh", "hosts": []string{"api.github.com"}, "value": value}}); code != 201 {
		t.Fatalf("add as the owner: %d %v", code, body)
	}
	_, body := do(t, base, call{method: "POST", path: "/api/sandbox/tokens", body: map[string]any{"name": "agent"}})
	agent, _ := body["secret"].(string)
	_, body = do(t, base, call{method: "POST", path: "/api/sandbox/tenants", body: map[string]any{"name": "acme", "tools": []string{"sbx_capabilities", "sbx_create"}}})
	tenant, _ := body["token"].(map[string]any)["secret"].(string)
	if agent == "" || tenant == "" {
		t.Fatalf("no tokens: %q %q", agent, tenant)
	}
	code, list := doAs(t, base, agent, call{method: "GET", path: "/api/sandbox/secrets"})
	raw, _ := json.Marshal(list)
	if code != 200 || !strings.Contains(string(raw), `"name":"gh"`) || strings.Contains(string(raw), value) {
		t.Errorf("the agent's list: %d %s", code, raw)
	}
	if code, list := doAs(t, base, tenant, call{method: "GET", path: "/api/sandbox/secrets"}); code != 200 || len(list["secrets"].([]any)) != 0 {
		t.Errorf("the tenant's list: %d %v", code, list)
	}
	for _, tok := range []string{agent, tenant} {
		for _, c := range []call{
			{method: "POST", path: "/api/sandbox/secrets", body: map[string]any{"name": "mine", "hosts": []string{"x.test"}, "value": "a-value-of-mine"}},
			{method: "PUT", path: "/api/sandbox/secrets/gh", body: map[string]any{"value": "a-value-of-mine"}},
			{method: "DELETE", path: "/api/sandbox/secrets/gh"},
		} {
			if code, body := doAs(t, base, tok, c); code != 403 || body["scope"] != "secrets:admin" {
				t.Errorf("%s %s as a non-owner: %d %v", c.method, c.path, code, body)
			}
		}
	}
	code, body = doAs(t, base, tenant, call{method: "POST", path: "/api/sandbox/sandboxes", body: map[string]any{"name": "t1", "secrets": []string{"gh"}}})
	if code != 400 || !strings.Contains(fmt.Sprint(body["error"]), `secrets "gh"`) {
		t.Errorf("a tenant's sandbox with the owner's secret: %d %v", code, body)
	}
}
