package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/senclaw/sandbox/app/apitype"
)

// Whoami says who the engine takes this client for. With tool it also
// asks whether that principal may call the MCP tool now: a refusal is an
// *Error (403) naming the scope or the tool policy, which the engine
// records as a security event.
func (c *Client) Whoami(ctx context.Context, tool string) (*apitype.Whoami, error) {
	var q url.Values
	if tool != "" {
		q = url.Values{"tool": {tool}}
	}
	var out apitype.Whoami
	return &out, c.Do(ctx, http.MethodGet, "/whoami", q, nil, &out)
}

// WithToken returns a client of the same engine that sends tok as its
// bearer token: over the owner's socket it then acts as tok's principal
// (an agent, a tenant), not as the owner.
func (c *Client) WithToken(tok string) *Client {
	cp := *c
	cp.token = tok
	return &cp
}

// Token is the bearer token the client sends ("" for none).
func (c *Client) Token() string { return c.token }

// Tokens lists the agent and tenant tokens (owner only).
func (c *Client) Tokens(ctx context.Context) ([]apitype.TokenView, error) {
	var out struct {
		Tokens []apitype.TokenView `json:"tokens"`
	}
	return out.Tokens, c.Do(ctx, http.MethodGet, "/tokens", nil, nil, &out)
}

// AddToken makes an agent token named name, of tenant when it is not
// empty, with tools as its own policy (nil: none). The answer's secret is
// shown this once.
func (c *Client) AddToken(ctx context.Context, name, tenant string, tools []string) (*apitype.TokenIssued, error) {
	body := map[string]any{"name": name}
	if tenant != "" {
		body["tenant"] = tenant
	}
	if tools != nil {
		body["tools"] = tools
	}
	var out apitype.TokenIssued
	return &out, c.Do(ctx, http.MethodPost, "/tokens", nil, body, &out)
}

// RotateToken gives the token (id or name) a new secret; the old one
// stops working.
func (c *Client) RotateToken(ctx context.Context, key string) (*apitype.TokenIssued, error) {
	var out apitype.TokenIssued
	return &out, c.Do(ctx, http.MethodPost, "/tokens/"+url.PathEscape(key)+"/rotate", nil, nil, &out)
}

// SetTokenTools replaces the token's own tool policy (nil: none).
func (c *Client) SetTokenTools(ctx context.Context, key string, tools []string) (*apitype.TokenView, error) {
	var out apitype.TokenView
	return &out, c.Do(ctx, http.MethodPatch, "/tokens/"+url.PathEscape(key), nil, map[string]any{"tools": tools}, &out)
}

// RemoveToken removes the token (id or name).
func (c *Client) RemoveToken(ctx context.Context, key string) error {
	return c.Do(ctx, http.MethodDelete, "/tokens/"+url.PathEscape(key), nil, nil, nil)
}

// SecurityEvents lists the stored security events (owner only), newest
// first.
func (c *Client) SecurityEvents(ctx context.Context, q apitype.SecurityEventQuery) (*apitype.SecurityEventPage, error) {
	v := url.Values{}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	for k, s := range map[string]string{"before": q.Before, "principal": q.Principal, "kind": q.Kind, "tenant": q.Tenant} {
		if s != "" {
			v.Set(k, s)
		}
	}
	var out apitype.SecurityEventPage
	return &out, c.Do(ctx, http.MethodGet, "/security-events", v, nil, &out)
}

// FollowSecurityEvents calls onEvent with the last q.Limit events that
// match q, oldest first, then with each one recorded from then on, until
// ctx ends or the engine goes.
func (c *Client) FollowSecurityEvents(ctx context.Context, q apitype.SecurityEventQuery, onEvent func(apitype.SecurityEvent)) error {
	v := url.Values{"follow": {"1"}}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	for k, s := range map[string]string{"principal": q.Principal, "kind": q.Kind, "tenant": q.Tenant} {
		if s != "" {
			v.Set(k, s)
		}
	}
	resp, err := c.send(ctx, http.MethodGet, "/security-events", v, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return decodeAnswer(resp, nil)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev apitype.SecurityEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading the security events: %w", err)
		}
		onEvent(ev)
	}
}
