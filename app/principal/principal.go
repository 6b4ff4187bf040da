// Package principal says who makes a request and what it may do there.
//
// Every request to the engine is made by a principal: the owner (the
// desktop user's socket, the dashboard session, the owner token), an agent
// (an MCP client, a hook, the agent shell, each with a token of its own),
// an app (a Space App's own token) or a tenant. Each REST operation and
// MCP tool names the scope it needs in one table (table.json, which the
// OpenAPI document shows per operation); only the owner holds the scopes
// that change what the engine enforces. The faces resolve the principal
// once, from a token and never from the process's word, and carry it in
// the request's context, where the engine and its capabilities read it.
package principal

import (
	"context"
	"slices"
	"strings"
)

// Kind is what sort of principal made a request.
type Kind string

// The kinds of principal.
const (
	// Owner is the person whose engine it is: every scope, every tenant.
	Owner Kind = "owner"
	// Agent is an MCP client, a hook or the agent shell acting with an
	// agent token: what the 22 tools do, inside the policy.
	Agent Kind = "agent"
	// App is a Space App with its own token: its own runtime and logs.
	App Kind = "app"
	// Tenant is a named principal with its own objects, directory,
	// quotas and tool policy.
	Tenant Kind = "tenant"
)

// Principal is who sent a request, as the faces resolved it.
type Principal struct {
	Kind Kind `json:"kind"`
	// Name is the token's name (agent, tenant) or the app's id; empty
	// for the owner.
	Name string `json:"name,omitempty"`
	// TokenID is the id of the token that authenticated the request
	// (never its secret); empty for the owner's socket and session.
	TokenID string `json:"tokenId,omitempty"`
	// Tenant is the slug of the tenant whose objects the principal acts
	// on; empty is the owner's own (the master tenant). The owner sees
	// every tenant's objects whatever this says.
	Tenant string `json:"tenant,omitempty"`
	// Tools is the tool policy: the tools and REST operation groups the
	// principal may call (ToolNames); nil allows every one its scopes
	// allow.
	Tools []string `json:"tools"`
	// Quota bounds a tenant's use of the engine; zero fields bound
	// nothing.
	Quota Quota `json:"quota"`
	// Paths are host folders the owner granted a tenant beyond its own
	// directory (for mounts, project dirs and app folders).
	Paths []string `json:"paths,omitempty"`
	// Via says how the request came: socket, tcp, lan or inproc.
	Via string `json:"via,omitempty"`
}

// Quota bounds what one tenant holds and runs at once.
type Quota struct {
	// Sandboxes is how many persistent sandboxes it may hold.
	Sandboxes int `json:"sandboxes"`
	// Runs is how many of its runs may go on at once.
	Runs int `json:"runs"`
	// DiskMB bounds its directory and each of its workspaces, in MB.
	DiskMB int `json:"diskMb"`
}

// OwnerPrincipal is the owner, as the socket and the dashboard make it.
var OwnerPrincipal = Principal{Kind: Owner}

// IsOwner reports whether p is the owner.
func (p Principal) IsOwner() bool { return p.Kind == Owner }

// String names p for people and logs: owner, agent "claude-code",
// tenant "acme", agent "ci" of tenant "acme", app "notes".
func (p Principal) String() string {
	switch {
	case p.Kind == Owner:
		return "the owner"
	case p.Kind == Tenant:
		return "tenant " + quote(p.Name)
	case p.Tenant != "" && p.Kind == Agent:
		return "agent " + quote(p.Name) + " of tenant " + quote(p.Tenant)
	case p.Kind == "":
		return "an unknown principal"
	}
	return string(p.Kind) + " " + quote(p.Name)
}

// Label is p in one word for records and filters: owner, agent:NAME,
// tenant:NAME, app:ID; empty for no principal (a token nobody has).
func (p Principal) Label() string {
	switch p.Kind {
	case "":
		return ""
	case Owner:
		return string(Owner)
	}
	return string(p.Kind) + ":" + p.Name
}

// FromLabel is the principal a record's Label names, of tenant: what the
// engine acts as for a schedule's firing when its maker is gone from the
// request (no quota or policy; the engine adds what it knows of the
// tenant).
func FromLabel(label, tenant string) Principal {
	kind, name, ok := strings.Cut(label, ":")
	if !ok || label == "" || kind == string(Owner) {
		return OwnerPrincipal
	}
	return Principal{Kind: Kind(kind), Name: name, Tenant: tenant}
}

// Sees reports whether p may see an object of tenant: the owner sees
// every tenant's; anyone else only its own tenant's (the owner's own
// objects have tenant "").
func (p Principal) Sees(tenant string) bool {
	return p.Kind == Owner || p.Tenant == tenant
}

// AllowsTool reports whether p's tool policy lets it call tool (an sbx_*
// tool or an operation group). The empty tool, the routes every holder
// of their scope may use, is always allowed.
func (p Principal) AllowsTool(tool string) bool {
	return tool == "" || p.Tools == nil || slices.Contains(p.Tools, tool)
}

type ctxKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// From returns the principal ctx carries, and whether it carries one.
func From(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// Of returns the principal ctx carries. A context without one is the
// engine's own work (a schedule firing, an app's supervision, a test)
// and acts as the owner: the faces always set one.
func Of(ctx context.Context) Principal {
	if p, ok := From(ctx); ok {
		return p
	}
	return OwnerPrincipal
}

func quote(s string) string {
	if s == "" {
		return `""`
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || r == 0x7f:
			b = append(b, '?')
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}
