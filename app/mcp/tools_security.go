package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/secevents"
)

type securityArgs struct {
	Limit     int    `json:"limit,omitempty" jsonschema:"how many of the newest events, 1 to 1000"`
	Principal string `json:"principal,omitempty" jsonschema:"only one principal's: owner, agent:NAME, tenant:NAME, app:ID, or a kind and a colon (agent:)"`
	Kind      string `json:"kind,omitempty" jsonschema:"only events of this kind or prefix: security.scope_denied, security.tool_policy_denied, security.cross_tenant_denied, security.token_rejected, security.lan_"`
}

type securityResult struct {
	Events []secevents.Event `json:"events" jsonschema:"newest first"`
	More   bool              `json:"more" jsonschema:"older events match too"`
}

// addSecurityTools adds the owner's tool: the security events. Agents
// and tenants never see it listed (it needs security:read).
func (s *server) addSecurityTools(srv *sdk.Server) {
	addTool(srv, "sbx_security_events", "What the engine refused, and to whom",
		"List the security events, newest first (the owner's tool: agents and tenants do not have it): each refusal of a request (a scope its principal "+
			"does not hold, a tool its policy leaves out, another tenant's id, a token nobody has, the LAN listener's lockouts) and each degraded guarantee, "+
			"with the time, the principal, where it came from, the request's first 200 characters and the reason.",
		readOnly, inputSchema[securityArgs](withDefault("limit", 50), withRange("limit", 1, 1000)),
		func(ctx context.Context, _ *sdk.CallToolRequest, in securityArgs) (*sdk.CallToolResult, securityResult, error) {
			if in.Limit < 1 || in.Limit > 1000 {
				return nil, securityResult{}, fmt.Errorf("limit %d: must be a whole number from 1 to 1000", in.Limit)
			}
			page, err := call(ctx, s, func(c *client.Client) (*secevents.Page, error) {
				return c.SecurityEvents(ctx, secevents.Query{Limit: in.Limit, Principal: in.Principal, Kind: in.Kind})
			})
			if err != nil {
				return nil, securityResult{}, err
			}
			return nil, securityResult{Events: page.Events, More: page.More}, nil
		})
}
