package principal

import (
	"fmt"
	"slices"
	"strings"
)

// Scope is what an operation needs: "resource:verb".
type Scope string

// The scopes. Those that change what the engine enforces, or reach past
// one tenant's objects, are the owner's alone (ownerOnly).
const (
	StatusRead     Scope = "status:read"      // health, status, capabilities, who am I
	SettingsRead   Scope = "settings:read"    // the settings
	SettingsWrite  Scope = "settings:write"   // change any setting
	PolicyRead     Scope = "policy:read"      // the enforcement switches
	PolicyWrite    Scope = "policy:write"     // change the enforcement switches
	SandboxesRead  Scope = "sandboxes:read"   // sandboxes, their files, stats and events
	SandboxesWrite Scope = "sandboxes:write"  // create, change and delete sandboxes and their files
	RunsRead       Scope = "runs:read"        // run records and logs
	RunsWrite      Scope = "runs:write"       // run commands and code, kill runs
	AgentShell     Scope = "agent-shell:run"  // the agent shell (hooks, SHELL wrapper)
	SchedulesRead  Scope = "schedules:read"   // scheduled scripts
	SchedulesWrite Scope = "schedules:write"  // schedules whose firings run sandboxed
	SchedulesHost  Scope = "schedules:host"   // schedules whose firings run on the host
	AppsRead       Scope = "apps:read"        // Space Apps
	AppsWrite      Scope = "apps:write"       // register, start, stop and change sandboxed apps
	AppsHost       Scope = "apps:unsandboxed" // Space Apps that run with no sandbox
	AppSelf        Scope = "app:self"         // a Space App's own runtime and logs
	TokensAdmin    Scope = "tokens:admin"     // agent tokens
	TenantsAdmin   Scope = "tenants:admin"    // tenants
	SecretsAdmin   Scope = "secrets:admin"    // the engine's secrets (their names reach agents through the capabilities)
	SecurityRead   Scope = "security:read"    // security events
	DaemonAdmin    Scope = "daemon:admin"     // stop the daemon, log in, autostart, doctor, integrations, stop all
	Public         Scope = "public"           // the dashboard's page and login, which check their own way
)

// ownerOnly are the scopes no principal but the owner holds.
var ownerOnly = []Scope{SettingsWrite, PolicyWrite, SchedulesHost, AppsHost, TokensAdmin, TenantsAdmin, SecretsAdmin, SecurityRead, DaemonAdmin}

// agentScopes are what agents and tenants hold: what the 22 tools and
// the agent shell do, on their own tenant's objects.
var agentScopes = []Scope{StatusRead, SettingsRead, PolicyRead, SandboxesRead, SandboxesWrite, RunsRead, RunsWrite, AgentShell, SchedulesRead, SchedulesWrite, AppsRead, AppsWrite, Public}

// Scopes lists every scope, for the table's check.
var Scopes = []Scope{StatusRead, SettingsRead, SettingsWrite, PolicyRead, PolicyWrite, SandboxesRead, SandboxesWrite, RunsRead, RunsWrite, AgentShell,
	SchedulesRead, SchedulesWrite, SchedulesHost, AppsRead, AppsWrite, AppsHost, AppSelf, TokensAdmin, TenantsAdmin, SecretsAdmin, SecurityRead, DaemonAdmin, Public}

// OwnerOnly reports whether only the owner holds s.
func OwnerOnly(s Scope) bool { return slices.Contains(ownerOnly, s) }

// Holds reports whether p holds scope s. The owner holds every scope;
// an app only its own routes (AppSelf) and the public ones.
func (p Principal) Holds(s Scope) bool {
	if s == Public {
		return true
	}
	switch p.Kind {
	case Owner:
		return true
	case Agent, Tenant:
		return slices.Contains(agentScopes, s)
	case App:
		return s == AppSelf || s == Public
	}
	return false
}

// Need returns a *DeniedError when p does not hold s, else nil.
func (p Principal) Need(s Scope) error {
	if p.Holds(s) {
		return nil
	}
	return &DeniedError{Principal: p, Scope: s}
}

// DeniedError is a request refused because its principal lacks a scope,
// or because its tool policy leaves the tool out. Nothing was done.
type DeniedError struct {
	Principal Principal
	// Scope is the scope that was missing (empty for a tool policy
	// refusal).
	Scope Scope
	// Tool is the tool the policy leaves out (empty for a scope
	// refusal).
	Tool string
	// What names the operation, when it is not the route itself ("host
	// schedules").
	What string
}

func (e *DeniedError) Error() string {
	if e.Tool != "" {
		allowed := "none"
		if len(e.Principal.Tools) > 0 {
			allowed = strings.Join(e.Principal.Tools, ", ")
		}
		return fmt.Sprintf("%s is not in the tool policy of %s (it allows %s); the owner can change it with `senclaw %s`", e.Tool, e.Principal, allowed, policyCommand(e.Principal))
	}
	what := "this operation"
	if e.What != "" {
		what = e.What
	}
	who := "only the owner holds it"
	if !OwnerOnly(e.Scope) {
		who = "which " + e.Principal.String() + " does not hold"
	}
	return fmt.Sprintf("%s needs the scope %s, %s; this request was made by %s, so nothing was done (the owner can do it from the dashboard or the senclaw CLI)", what, e.Scope, who, e.Principal)
}

// policyCommand is the CLI command that changes p's tool policy.
func policyCommand(p Principal) string {
	if p.Kind == Tenant {
		return "tenants set --tools ... " + p.Name
	}
	return "tokens set --tools ... " + p.Name
}
