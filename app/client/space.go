package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/senclaw/sandbox/app/apitype"
)

// The Space Apps routes (/api/space/apps/, app/spaceapps).

func appPath(id string, rest string) string {
	return "/api/space/apps/" + url.PathEscape(id) + rest
}

// Apps lists the Space Apps with the overview.
func (c *Client) Apps(ctx context.Context) (*apitype.AppList, error) {
	var out apitype.AppList
	return &out, c.Do(ctx, http.MethodGet, "/api/space/apps", nil, nil, &out)
}

// RegisterApp registers (or updates) the app in a folder.
func (c *Client) RegisterApp(ctx context.Context, req apitype.AppRegisterRequest) (*apitype.AppRegisterReply, error) {
	var out apitype.AppRegisterReply
	return &out, c.Do(ctx, http.MethodPost, "/api/space/apps", nil, req, &out)
}

// RemoveApp stops and forgets an app (purge: and the engine's copy of its
// files) and says what became of its files.
func (c *Client) RemoveApp(ctx context.Context, id string, purge bool) (string, error) {
	var out struct {
		Files string `json:"files"`
	}
	return out.Files, c.Do(ctx, http.MethodDelete, appPath(id, ""), url.Values{"purge": {strconv.FormatBool(purge)}}, nil, &out)
}

// StartApp starts an app, waiting for its health check when wait.
func (c *Client) StartApp(ctx context.Context, id string, wait bool) (*apitype.AppStartReply, error) {
	var out apitype.AppStartReply
	return &out, c.Do(ctx, http.MethodPost, appPath(id, "/start"), url.Values{"wait": {strconv.FormatBool(wait)}}, nil, &out)
}

// RestartApp stops an app gracefully and starts it again.
func (c *Client) RestartApp(ctx context.Context, id string, wait bool) (*apitype.AppStartReply, error) {
	var out apitype.AppStartReply
	return &out, c.Do(ctx, http.MethodPost, appPath(id, "/restart"), url.Values{"wait": {strconv.FormatBool(wait)}}, nil, &out)
}

// StopApp stops an app as a person asks.
func (c *Client) StopApp(ctx context.Context, id string) (*apitype.AppView, error) {
	var out struct {
		App *apitype.AppView `json:"app"`
	}
	return out.App, c.Do(ctx, http.MethodPost, appPath(id, "/stop"), nil, nil, &out)
}

// AppRuntime reads what an app runs now.
func (c *Client) AppRuntime(ctx context.Context, id string) (*apitype.AppRuntime, error) {
	var out apitype.AppRuntime
	return &out, c.Do(ctx, http.MethodGet, appPath(id, "/runtime"), nil, nil, &out)
}

func logQuery(limit int) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// AppLogs reads the end of an app's log (limit bytes; 0 is the default).
func (c *Client) AppLogs(ctx context.Context, id string, limit int) (*apitype.AppLogChunk, error) {
	var out apitype.AppLogChunk
	return &out, c.Do(ctx, http.MethodGet, appPath(id, "/logs"), logQuery(limit), nil, &out)
}

// FollowAppLogs calls onText with the end of the log, then with what the
// app writes, until ctx ends or the engine closes the stream.
func (c *Client) FollowAppLogs(ctx context.Context, id string, limit int, onText func(string)) error {
	q := logQuery(limit)
	q.Set("follow", "1")
	resp, err := c.send(ctx, http.MethodGet, appPath(id, "/logs"), q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return decodeAnswer(resp, nil)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var line struct {
			Text string `json:"text"`
		}
		if err := dec.Decode(&line); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading the log stream: %w", err)
		}
		onText(line.Text)
	}
}

// ClearAppLogs empties an app's log.
func (c *Client) ClearAppLogs(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, appPath(id, "/logs"), nil, nil, nil)
}

// AppSandbox reads an app's sandbox configuration.
func (c *Client) AppSandbox(ctx context.Context, id string) (*apitype.AppSandboxView, error) {
	var out apitype.AppSandboxView
	return &out, c.Do(ctx, http.MethodGet, appPath(id, "/sandbox"), nil, nil, &out)
}

// SetAppSandbox changes an app's sandbox configuration.
func (c *Client) SetAppSandbox(ctx context.Context, id string, p apitype.AppSandboxPatch) (*apitype.AppSandboxReply, error) {
	var out apitype.AppSandboxReply
	return &out, c.Do(ctx, http.MethodPut, appPath(id, "/sandbox"), nil, p, &out)
}

// AppIsolation reads an app's effective isolation.
func (c *Client) AppIsolation(ctx context.Context, id string) (*apitype.AppIsolation, error) {
	var out apitype.AppIsolation
	return &out, c.Do(ctx, http.MethodGet, appPath(id, "/isolation"), nil, nil, &out)
}
