package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/secevents"
)

type securityArgs struct {
	Limit     int    `json:"limit,omitempty" jsonschema:"how many of the newest events, 1 to 1000"`
	Principal string `json:"principal,omitempty" jsonschema:"only one principal's: owner, agent:NAME, tenant:NAME, app:ID, or a kind and a colon (agent:)"`
	Kind      string `json:"kind,omitempty" jsonschema:"only events of this kind or prefix: security.scope_denied, security.tool_policy_denied, security.cross_tenant_denied, security.token_rejected, security.lan_"`
}

type policyCheckArgs struct {
	ProjectDir string   `json:"projectDir,omitempty" jsonschema:"the project whose .senclaw/policy.json narrows the owner's policy; absent: the owner's policy alone"`
	AgentShell bool     `json:"agentShell,omitempty" jsonschema:"judge the command as the agent shell would run it in the project; else as senclaw run --here would"`
	Command    string   `json:"command,omitempty" jsonschema:"a shell command line to judge; absent (with argv): the policy alone"`
	Argv       []string `json:"argv,omitempty" jsonschema:"an exact argument vector, in place of command"`
}

type securityResult struct {
	Events []secevents.Event `json:"events" jsonschema:"newest first"`
	More   bool              `json:"more" jsonschema:"older events match too"`
}

// addSecurityTools adds the owner's tools: the security events and the
// policy check. Agents and tenants never see them listed (they need
// security:read and policy:write, which only the owner holds).
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
	addTool(srv, "sbx_policy_check", "What the policy files make of a command, running nothing",
		"The owner's tool: say, running nothing, what the layered policy files make of a command in a project: the effective policy with the file that decided "+
			"each value (the owner's ~/.config/senclaw/policy.json, or the project's .senclaw/policy.json, which can only narrow it), the project's keys that were "+
			"ignored because they would widen the owner's, and whether the run would be refused and why (brokenFile: a policy file that cannot be read, with its line and column).",
		readOnly, inputSchema[policyCheckArgs](),
		func(ctx context.Context, _ *sdk.CallToolRequest, in policyCheckArgs) (*sdk.CallToolResult, apitype.PolicyCheck, error) {
			rep, err := call(ctx, s, func(c *client.Client) (*apitype.PolicyCheck, error) {
				return c.PolicyCheck(ctx, apitype.PolicyCheckRequest{ProjectDir: in.ProjectDir, AgentShell: in.AgentShell, Command: in.Command, Argv: in.Argv})
			})
			if err != nil {
				return nil, apitype.PolicyCheck{}, err
			}
			return nil, *rep, nil
		})
}
