package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/backends"
)

// The calls in this file are the ones the MCP server needs beyond what the
// CLI uses. Their names are distinct so that they cannot collide with calls
// added elsewhere in this package.

// CodeLanguages lists the languages code runs accept (GET /languages).
func (c *Client) CodeLanguages(ctx context.Context) ([]string, error) {
	var out struct {
		Languages []string `json:"languages"`
	}
	return out.Languages, c.Do(ctx, http.MethodGet, "/languages", nil, nil, &out)
}

// FsModeList lists the fs modes with their labels (GET /fs-modes).
func (c *Client) FsModeList(ctx context.Context) ([]apitype.FsModeInfo, error) {
	var out struct {
		FsModes []apitype.FsModeInfo `json:"fsModes"`
	}
	return out.FsModes, c.Do(ctx, http.MethodGet, "/fs-modes", nil, nil, &out)
}

// SandboxStats reads what runs in a sandbox now (GET .../stats).
func (c *Client) SandboxStats(ctx context.Context, id string) (*apitype.Stats, error) {
	var out apitype.Stats
	return &out, c.Do(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id)+"/stats", nil, nil, &out)
}

// KillReply is the answer of KillProcesses: Killed is the pid killed, or
// Groups the number of process groups stopped when no pid was given.
type KillReply struct {
	OK     bool `json:"ok"`
	Killed *int `json:"killed,omitempty"`
	Groups *int `json:"groups,omitempty"`
}

// KillProcesses kills one process of a sandbox (only one that belongs to
// it), or all of them when pid is 0 (POST .../kill).
func (c *Client) KillProcesses(ctx context.Context, id string, pid int) (*KillReply, error) {
	var out KillReply
	body := map[string]int{}
	if pid != 0 {
		body["pid"] = pid
	}
	return &out, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/kill", nil, body, &out)
}

// FsModeReply is the answer of POST .../fs-mode.
type FsModeReply = apitype.FsModeReply

// ChangeFsMode changes what a sandbox may read, with the typed answer.
func (c *Client) ChangeFsMode(ctx context.Context, id, mode string) (*FsModeReply, error) {
	var out FsModeReply
	return &out, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/fs-mode", nil, map[string]string{"fsMode": mode}, &out)
}

// UnmountReply is the answer of POST .../mounts/remove.
type UnmountReply struct {
	OK         bool   `json:"ok"`
	Unmounted  string `json:"unmounted"`
	RealFolder string `json:"realFolder"`
}

// Unmount removes a mount from a sandbox, with the typed answer.
func (c *Client) Unmount(ctx context.Context, id, target string) (*UnmountReply, error) {
	var out UnmountReply
	return &out, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/mounts/remove", nil, map[string]string{"target": target}, &out)
}

// TraceReply is the answer of POST .../trace.
type TraceReply struct {
	OK bool `json:"ok"`
	// Tracing is "ON" or "OFF".
	Tracing string `json:"tracing"`
	Note    string `json:"note"`
}

// SetTracing switches run tracing of a sandbox on or off (POST .../trace).
func (c *Client) SetTracing(ctx context.Context, id string, enabled bool) (*TraceReply, error) {
	var out TraceReply
	return &out, c.Do(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/trace", nil, map[string]bool{"enabled": enabled}, &out)
}

// TraceEvent is one traced event as GET .../events returns it.
type TraceEvent struct {
	RunID string `json:"runId,omitempty"`
	backends.TraceEvent
}

// EventsQuery selects trace events: RunID and Kind (a prefix: file, proc,
// net) narrow them, Limit bounds them (0: the server's default).
type EventsQuery struct {
	RunID string
	Kind  string
	Limit int
}

// EventsReply is the answer of GET .../events.
type EventsReply struct {
	TraceEnabled bool         `json:"traceEnabled"`
	Events       []TraceEvent `json:"events"`
	Note         string       `json:"note"`
}

// TraceEvents reads a sandbox's traced events, newest first.
func (c *Client) TraceEvents(ctx context.Context, id string, q EventsQuery) (*EventsReply, error) {
	var out EventsReply
	v := url.Values{}
	if q.RunID != "" {
		v.Set("runId", q.RunID)
	}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return &out, c.Do(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id)+"/events", v, nil, &out)
}
