package apitype

import (
	"time"

	"github.com/senclaw/sandbox/app/principal"
)

// Whoami is the answer of GET /whoami: the principal that sent the
// request and the scopes it holds.
type Whoami struct {
	principal.Principal
	Scopes []principal.Scope `json:"scopes"`
}

// TokenView is an agent or tenant token as the faces show it: never its
// secret.
type TokenView struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Kind       principal.Kind `json:"kind"`
	Tenant     string         `json:"tenant,omitempty"`
	Tools      []string       `json:"tools"`
	CreatedAt  time.Time      `json:"createdAt"`
	RotatedAt  time.Time      `json:"rotatedAt,omitzero"`
	LastUsedAt time.Time      `json:"lastUsedAt,omitzero"`
}

// TokenIssued is a token with its secret, shown once: on creation and
// rotation.
type TokenIssued struct {
	Token  TokenView `json:"token"`
	Secret string    `json:"secret"`
}

// Tenant is one tenant: its quotas, tool policy and granted paths.
type Tenant struct {
	// Name is the tenant's name, which is also its slug: its directory's
	// name and what its objects record.
	Name  string          `json:"name"`
	Quota principal.Quota `json:"quota"`
	// Tools is its tool policy; nil allows every tool its scopes allow.
	Tools []string `json:"tools"`
	// Paths are host folders the owner granted it beyond its directory.
	Paths     []string  `json:"paths"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// TenantView is a tenant as the faces show it.
type TenantView struct {
	Tenant
	// Dir is its directory.
	Dir string `json:"dir"`
	// Tokens counts its tokens (its own and its agents').
	Tokens int `json:"tokens"`
}

// TenantAdded is a new tenant and its first token, whose secret is shown
// this once.
type TenantAdded struct {
	Tenant TenantView   `json:"tenant"`
	Token  *TokenIssued `json:"token"`
}

// SecurityEvent is one security event: a refusal, or a guarantee the
// engine could not give.
type SecurityEvent struct {
	// ID sorts by time: the newest event has the largest.
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// Kind is security.*: scope_denied, tool_policy_denied,
	// cross_tenant_denied, token_rejected, lan_locked_out, ...
	Kind string `json:"kind"`
	// Principal is who made the request (principal.Label): owner,
	// agent:NAME, tenant:NAME, app:ID; empty when no token matched.
	Principal string `json:"principal"`
	// Tenant is the principal's tenant ("" for the owner's own).
	Tenant string `json:"tenant,omitempty"`
	// Source is where it came from: socket, tcp, lan, inproc (the MCP
	// face), mcp, engine, proxy.
	Source string `json:"source"`
	// Request is the request's first characters (secevents.MaxRequest):
	// the method and URL, or the MCP method and arguments.
	Request string `json:"request"`
	Reason  string `json:"reason"`
	// Remote is the client's address, for a request over the network.
	Remote string `json:"remote,omitempty"`
}

// SecurityEventQuery selects security events (GET /security-events).
type SecurityEventQuery struct {
	// Limit is how many (1 to 1000; 50 by default).
	Limit int
	// Before lists the events older than this id ("" for the newest).
	Before string
	// Principal keeps the events of one principal (its label, or a
	// prefix ending in ":" such as "tenant:"); Kind those of one kind
	// (security.scope_denied, or a prefix such as security.tool).
	Principal, Kind string
	// Tenant keeps the events of one tenant; "-" the owner's own.
	Tenant string
}

// SecurityEventPage is a list of events, newest first, and whether older
// ones match.
type SecurityEventPage struct {
	Events []SecurityEvent `json:"events"`
	More   bool            `json:"more"`
}
