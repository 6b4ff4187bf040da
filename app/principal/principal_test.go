package principal

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestOnlyTheOwnerHoldsTheOwnerScopes: every scope that changes what the
// engine enforces is the owner's alone, whatever kind asks.
func TestOnlyTheOwnerHoldsTheOwnerScopes(t *testing.T) {
	t.Parallel()
	kinds := []Principal{
		{Kind: Agent, Name: "claude-code"}, {Kind: Tenant, Name: "acme", Tenant: "acme"},
		{Kind: Agent, Name: "ci", Tenant: "acme"}, {Kind: App, Name: "notes"}, {},
	}
	for _, s := range ownerOnly {
		if !OwnerPrincipal.Holds(s) {
			t.Errorf("the owner does not hold %s", s)
		}
		for _, p := range kinds {
			if p.Holds(s) {
				t.Errorf("%s holds the owner's scope %s", p, s)
			}
			err := p.Need(s)
			var de *DeniedError
			if !errors.As(err, &de) || de.Scope != s || !strings.Contains(err.Error(), string(s)) || !strings.Contains(err.Error(), "only the owner") {
				t.Errorf("%s needing %s: %v", p, s, err)
			}
		}
	}
}

// TestEveryRouteAndToolHasAKnownScope loads the table: every row names a
// scope that exists, and every tool of a row is a tool or a group.
func TestEveryRouteAndToolHasAKnownScope(t *testing.T) {
	t.Parallel()
	if len(Patterns()) < 80 {
		t.Fatalf("the table has %d routes", len(Patterns()))
	}
	for _, name := range []string{"sbx_run", "sbx_exec", "sbx_settings", "sbx_security_events"} {
		if _, ok := ToolScope(name); !ok {
			t.Errorf("no scope for tool %s", name)
		}
	}
	if s, _ := ToolScope("sbx_security_events"); !OwnerOnly(s) {
		t.Errorf("sbx_security_events needs %s, which is not the owner's alone", s)
	}
	for _, key := range []string{"PUT /api/sandbox/exec-policy", "PUT /api/sandbox/settings", "POST /api/sandbox/daemon/stop"} {
		r, ok := Lookup(key)
		if !ok || !OwnerOnly(r.Scope) {
			t.Errorf("%s: %+v %v: want an owner-only scope", key, r, ok)
		}
	}
}

// TestToolPolicy: a policy lists tools and groups; nil allows all; a
// refusal names the tool and the policy.
func TestToolPolicy(t *testing.T) {
	t.Parallel()
	tenant := Principal{Kind: Tenant, Name: "acme", Tenant: "acme", Tools: DefaultTenantTools}
	exec, _ := Lookup("POST /api/sandbox/sandboxes/{id}/exec")
	err := Allow(tenant, exec)
	var de *DeniedError
	if !errors.As(err, &de) || de.Tool != "sbx_exec" || !strings.Contains(err.Error(), "sbx_exec is not in the tool policy of tenant \"acme\"") {
		t.Fatalf("exec by a default tenant: %v", err)
	}
	run, _ := Lookup("POST /api/sandbox/run-once")
	if err := Allow(tenant, run); err != nil {
		t.Fatalf("run-once by a default tenant: %v", err)
	}
	status, _ := Lookup("GET /api/sandbox/status")
	if err := Allow(tenant, status); err != nil {
		t.Fatalf("status, which no policy names: %v", err)
	}
	if err := Allow(Principal{Kind: Agent, Name: "a"}, exec); err != nil {
		t.Fatalf("an agent without a policy: %v", err)
	}
	if _, err := CheckTools([]string{"sbx_run", "rm_rf"}); err == nil || !strings.Contains(err.Error(), `"rm_rf"`) {
		t.Fatalf("an unknown tool in a policy: %v", err)
	}
	if got, err := CheckTools([]string{"sbx_runs", "schedules", "sbx_runs"}); err != nil || strings.Join(got, ",") != "sbx_runs,schedules" {
		t.Fatalf("CheckTools = %v %v", got, err)
	}
}

// TestAContextWithoutAPrincipalIsTheEnginesOwn: the faces always set
// one; the engine's own work (a firing, supervision) has none.
func TestAContextWithoutAPrincipalIsTheEnginesOwn(t *testing.T) {
	t.Parallel()
	if p := Of(context.Background()); !p.IsOwner() {
		t.Fatalf("Of(empty) = %v", p)
	}
	p := Principal{Kind: Agent, Name: "x\x1b[31m"}
	if got := Of(With(context.Background(), p)); got.Name != p.Name {
		t.Fatalf("Of(With(p)) = %v", got)
	}
	if s := p.String(); strings.ContainsRune(s, 0x1b) {
		t.Fatalf("String() passes an escape through: %q", s)
	}
}
