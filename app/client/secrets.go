package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/senclaw/sandbox/app/apitype"
)

// Secrets lists the engine's secrets (never their values).
func (c *Client) Secrets(ctx context.Context) ([]apitype.SecretInfo, error) {
	var out apitype.SecretsReply
	if err := c.Do(ctx, http.MethodGet, "/secrets", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Secrets, nil
}

// AddSecret adds a secret with its value.
func (c *Client) AddSecret(ctx context.Context, spec apitype.SecretSpec, value string) (*apitype.SecretInfo, error) {
	var out apitype.SecretInfo
	return &out, c.Do(ctx, http.MethodPost, "/secrets", nil, apitype.AddSecretBody{SecretSpec: spec, Value: value}, &out)
}

// RotateSecret gives a secret a new value.
func (c *Client) RotateSecret(ctx context.Context, name, value string) (*apitype.SecretInfo, error) {
	var out apitype.SecretInfo
	return &out, c.Do(ctx, http.MethodPut, "/secrets/"+url.PathEscape(name), nil, apitype.RotateSecretBody{Value: value}, &out)
}

// RemoveSecret removes a secret.
func (c *Client) RemoveSecret(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/secrets/"+url.PathEscape(name), nil, nil, nil)
}
