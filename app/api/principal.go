package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// Principal is who sent an authorized request: "owner" over the owner's
// Unix socket and the desktop window, "token:<id>" or "session:<id>" over
// TCP (the bearer token's or the dashboard session's id: a short hash,
// never the secret). Faces that keep state per caller (MCP sessions) bind
// it to this; a later per-agent token gets a principal of its own.
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

type principalKey struct{}

// AsOwner marks ctx as an in-process request of the owner (the daemon's
// own faces calling the API handler directly).
func AsOwner(ctx context.Context) context.Context {
	return context.WithValue(WithTransport(ctx, "inproc", nil), principalKey{}, "owner")
}

// withPrincipal records who sent the authorized request r.
func (s *Server) withPrincipal(r *http.Request) *http.Request {
	if Principal(r.Context()) != "" {
		return r
	}
	t, _ := r.Context().Value(transportKey{}).(transport)
	p := "owner"
	if t.kind == "tcp" {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case tok == "":
			p = "page" // the dashboard page and its login, which need none
		case subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1:
			p = "token:" + shortID(tok)
		default:
			p = "session:" + shortID(tok)
		}
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
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
		s.mux.Handle(m+" /mcp", h)
	}
}
