package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/senclaw/sandbox/app/principal"
)

// Principal is who sent an authorized request (see app/principal).
// Requests that reached no route's check (the dashboard's page) have the
// zero Principal.
func Principal(ctx context.Context) principal.Principal {
	p, _ := principal.From(ctx)
	return p
}

// AsOwner marks ctx as an in-process request of the owner (the daemon's
// own faces calling the API handler directly).
func AsOwner(ctx context.Context) context.Context {
	return As(ctx, principal.OwnerPrincipal)
}

// As marks ctx as an in-process request of p: the daemon's MCP face calls
// the API handler for the principal that sent it the request, which the
// API decides on again as if p had called it.
func As(ctx context.Context, p principal.Principal) context.Context {
	return principal.With(WithTransport(ctx, "inproc", nil), p)
}

// bearer is the request's bearer token, "" when it sends none.
func bearer(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

func shortID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}

// MountMCP serves h, the MCP Streamable HTTP transport, at /mcp, behind the
// same checks as the API: the owner's socket, or over TCP a known Host,
// no cross-site Origin, and a bearer token. Call it before Serve.
func (s *Server) MountMCP(h http.Handler) {
	// The transport's three methods: POST (messages), GET (the standalone
	// SSE stream) and DELETE (ending a session).
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		s.handle(m+" /mcp", h.ServeHTTP)
	}
}
