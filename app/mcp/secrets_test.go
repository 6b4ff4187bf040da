package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
)

// TestAgentsUseSecretsByNameOnly: an agent lists the secrets' names with
// sbx_capabilities, asks for one in sbx_run and sbx_create, and never
// sees a value; sbx_ports sets HTTP rules; a run's answer ends with what
// it was refused, each with how to allow it.
func TestAgentsUseSecretsByNameOnly(t *testing.T) {
	t.Parallel()
	c := startDaemon(t)
	const value = "the-value-an-agent-never-sees"
	if _, err := c.AddSecret(context.Background(), app.SecretSpec{Name: "gh", Hosts: []string{"api.github.com"}, Header: "Authorization"}, value); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, c)
	caps := ok(t, cs, "sbx_capabilities", map[string]any{})
	secrets, _ := caps.obj["secrets"].([]any)
	if len(secrets) != 1 || get(secrets[0].(map[string]any), "name") != "gh" || get(secrets[0].(map[string]any), "env") != "GH" || strings.Contains(mustJSON(caps.obj), value) {
		t.Fatalf("sbx_capabilities secrets: %v", caps.obj["secrets"])
	}
	r := ok(t, cs, "sbx_run", map[string]any{"command": `echo "GH=$GH"; env -u NO_PROXY -u no_proxy curl -s -m 5 -o /dev/null http://127.0.0.1:9/; exit 0`, "network": true, "secrets": []string{"gh"}})
	out := get(r.obj, "run", "stdout").(string)
	if !strings.HasPrefix(out, "GH=<senclaw-secret:gh:") || strings.Contains(mustJSON(r.obj)+r.text, value) {
		t.Fatalf("sbx_run with a secret: %v", r.obj)
	}
	refusals, _ := get(r.obj, "run", "refusals").([]any)
	if len(refusals) == 0 || get(refusals[0].(map[string]any), "kind") != "connect" || get(refusals[0].(map[string]any), "allow") == nil {
		t.Fatalf("refusals %v", get(r.obj, "run", "refusals"))
	}
	if !strings.Contains(r.text, "--- refused during the run (1) ---\n- connect 127.0.0.1:9: ") || !strings.HasSuffix(strings.TrimSpace(r.text), "(sbx_ports loopback) to reach this machine's service") {
		t.Fatalf("the text does not end with the refusals:\n%s", r.text)
	}
	fails(t, cs, "sbx_run", map[string]any{"command": "true", "secrets": []string{"nope"}}, `secrets[0] "nope": is not a secret of this engine`)

	cr := ok(t, cs, "sbx_create", map[string]any{"name": "with-gh", "secrets": []string{"gh"}, "allowHttp": []map[string]any{{"host": "api.github.com", "methods": []string{"get"}}}})
	id := cr.obj["sandboxId"].(string)
	sb, err := c.Sandbox(context.Background(), id)
	if err != nil || len(sb.Secrets) != 1 || len(sb.Ports.AllowHTTP) != 1 || sb.Ports.AllowHTTP[0].Methods[0] != "GET" {
		t.Fatalf("created %+v %v", sb, err)
	}
	pr := ok(t, cs, "sbx_ports", map[string]any{"sandboxId": id, "allowHttp": []map[string]any{{"host": "api.github.com", "paths": []string{"/repos/"}}}})
	rules, _ := pr.obj["allowHttp"].([]any)
	if len(rules) != 1 || get(rules[0].(map[string]any), "paths").([]any)[0] != "/repos/" {
		t.Fatalf("sbx_ports allowHttp: %v", pr.obj)
	}
	up := ok(t, cs, "sbx_update", map[string]any{"sandboxId": id, "secrets": []string{}, "allowHttp": []map[string]any{}})
	if s, _ := get(up.obj, "sandbox", "secrets").([]any); len(s) != 0 {
		t.Fatalf("sbx_update secrets []: %v", up.obj)
	}
}
