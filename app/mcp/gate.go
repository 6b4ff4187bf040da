package mcp

import (
	"context"
	"errors"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/principal"
)

// gate is the tool policy at the MCP face: tools/list lists only what the
// principal behind the client may call, and a call of any other tool is
// refused before anything runs, as a tool error naming the tool and the
// policy. The face decides nothing itself: it asks the engine (GET
// /whoami), which knows the principal from the client's token, applies
// its policy of the moment, and records each refusal as a security
// event. The API checks every request of the tools again.
func (s *server) gate(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			list, ok := res.(*sdk.ListToolsResult)
			if err != nil || !ok {
				return res, err
			}
			who, werr := call(ctx, s, func(c *client.Client) (*principalView, error) { return whoami(ctx, c, "") })
			if werr != nil {
				// No engine answers: nothing can be called anyway (each
				// tool says so); the tools are those of an agent, never
				// the owner's own.
				who = &principalView{p: principal.Principal{Kind: principal.Agent}, scopes: agentScopes()}
			}
			list.Tools = slices.DeleteFunc(list.Tools, func(t *sdk.Tool) bool { return !who.may(t.Name) })
			return list, nil
		case "tools/call":
			params, ok := req.GetParams().(*sdk.CallToolParamsRaw)
			if !ok {
				break
			}
			_, err := call(ctx, s, func(c *client.Client) (*principalView, error) { return whoami(ctx, c, params.Name) })
			var ce *client.Error
			if errors.As(err, &ce) && ce.Status == 403 {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: ce.Message}}}, nil
			}
			// An unknown tool (400) is the SDK's to answer; an engine that
			// does not answer, the tool's (nothing reaches an engine).
		}
		return next(ctx, method, req)
	}
}

// principalView is what the gate needs of GET /whoami.
type principalView struct {
	p      principal.Principal
	scopes []principal.Scope
}

func whoami(ctx context.Context, c *client.Client, tool string) (*principalView, error) {
	w, err := c.Whoami(ctx, tool)
	if err != nil {
		return nil, err
	}
	return &principalView{p: w.Principal, scopes: w.Scopes}, nil
}

// agentScopes are the scopes an agent holds.
func agentScopes() []principal.Scope {
	a := principal.Principal{Kind: principal.Agent}
	var out []principal.Scope
	for _, sc := range principal.Scopes {
		if a.Holds(sc) {
			out = append(out, sc)
		}
	}
	return out
}

// may reports whether the principal may call tool: it holds the tool's
// scope and its tool policy names the tool.
func (v *principalView) may(tool string) bool {
	scope, ok := principal.ToolScope(tool)
	return ok && slices.Contains(v.scopes, scope) && v.p.AllowsTool(tool)
}
