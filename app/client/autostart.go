package client

import (
	"context"
	"net/http"

	"github.com/senclaw/sandbox/app/autostart"
)

// Autostart reads whether the app starts at login, as it is on disk.
func (c *Client) Autostart(ctx context.Context) (*autostart.State, error) {
	var st autostart.State
	return &st, c.Do(ctx, http.MethodGet, "/autostart", nil, nil, &st)
}

// SetAutostart writes or removes the login autostart entry.
func (c *Client) SetAutostart(ctx context.Context, enabled bool) (*autostart.State, error) {
	var st autostart.State
	return &st, c.Do(ctx, http.MethodPut, "/autostart", nil, map[string]bool{"enabled": enabled}, &st)
}
