package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/client"
)

// The faces of the owner's CLI that agents run (the stdio MCP server, the
// hooks, the agent shell) act as agents, never as the owner: each with an
// agent token of its own, which the owner's CLI makes once over the
// owner's socket and keeps in the config dir (agent-tokens/, for the
// owner alone, hidden from every sandbox like the API token). The engine
// tells them apart by the token each request carries, not by what the
// process says of itself.

// faceTokenDir is where the faces' agent tokens are kept.
func faceTokenDir(configDir string) string { return filepath.Join(configDir, "agent-tokens") }

// facePath is where the agent token name is kept.
func facePath(configDir, name string) string {
	return filepath.Join(faceTokenDir(configDir), strings.ReplaceAll(name, ":", "-"))
}

// keptToken is the agent token name kept in the config dir, "" when
// there is none; whether the engine still takes it is not asked.
func keptToken(configDir, name string) string {
	data, err := os.ReadFile(facePath(configDir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// isUnauthorized says err is the engine's 401: a token it does not know.
func isUnauthorized(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Status == http.StatusUnauthorized
}

// agentClient returns a client of c's engine that acts as the agent token
// name (sandbox-server, agent-shell:claude-code, ...), of tenant when it
// is not empty: the one kept in the
// config dir, or, when there is none or the engine no longer knows it, a
// new one made with c (the owner's socket) and kept. A client that
// already sends a token (SENCLAW_TOKEN) is returned as it is: it acts as
// that token's principal.
func agentClient(ctx context.Context, c *client.Client, configDir, name, tenant string) (*client.Client, error) {
	if c.Token() != "" {
		return c, nil
	}
	path := facePath(configDir, name)
	if tok := keptToken(configDir, name); tok != "" {
		ac := c.WithToken(tok)
		_, err := ac.Whoami(ctx, "")
		var ce *client.Error
		switch {
		case err == nil:
			return ac, nil
		case !errors.As(err, &ce) || ce.Status != http.StatusUnauthorized:
			return nil, err
		}
		// Removed or rotated since: make it again.
	}
	iss, err := c.AddToken(ctx, name, tenant, nil)
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == http.StatusConflict {
		// Another process of this face (an MCP client starts several)
		// may have made it a moment ago and be writing it: take that
		// one rather than rotate it under its feet.
		if ac := waitForKept(ctx, c, path); ac != nil {
			return ac, nil
		}
		iss, err = c.RotateToken(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("making the agent token %s: %w", name, err)
	}
	if err := keepSecret(path, iss.Secret); err != nil {
		return nil, err
	}
	return c.WithToken(iss.Secret), nil
}

// waitForKept waits a little for a token another process is keeping at
// path, and returns a client with it once the engine takes it.
func waitForKept(ctx context.Context, c *client.Client, path string) *client.Client {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil {
			ac := c.WithToken(strings.TrimSpace(string(data)))
			if _, err := ac.Whoami(ctx, ""); err == nil {
				return ac
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// issue makes the agent token name (of tenant), or, when one of that
// name exists, gives it a new secret (rotated is then true: the old
// secret no longer works).
func issue(ctx context.Context, c *client.Client, name, tenant string) (secret string, rotated bool, err error) {
	iss, err := c.AddToken(ctx, name, tenant, nil)
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == http.StatusConflict {
		iss, err = c.RotateToken(ctx, name)
		rotated = true
	}
	if err != nil {
		return "", false, err
	}
	return iss.Secret, rotated, nil
}

// keepSecret writes secret to path, for the owner alone: a 0600 file in
// a 0700 folder, written aside and renamed over the old one.
func keepSecret(path, secret string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return fmt.Errorf("keeping the agent token: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// mcpToken is the bearer token an MCP client's configuration gets: an
// agent token made for that client (mcp:CLIENT), never the owner's. A
// client named before gets its token again with a new secret (there is
// one token per client name; its secret is shown only when it is made),
// and the note says the earlier configuration stops working.
//
// known is the token the client's file holds already (--write), if any:
// while the engine still takes it for that client's token it is kept, so
// that writing the same configuration twice changes nothing.
func mcpToken(ctx context.Context, c *client.Client, clientName, tenant, known string) (token, note string, err error) {
	name := "mcp:" + clientName
	if known != "" {
		if w, err := c.WithToken(known).Whoami(ctx, ""); err == nil && w.Name == name && w.TokenID != "" {
			return known, "", nil
		}
	}
	secret, rotated, err := issue(ctx, c, name, tenant)
	if err != nil {
		return "", "", fmt.Errorf("making the agent token %s: %w", name, err)
	}
	if rotated {
		note = "the agent token " + name + " existed: it has a new secret now, and a configuration printed before with the old one stops working"
	}
	return secret, note, nil
}
