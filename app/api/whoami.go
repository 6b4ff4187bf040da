package api

import (
	"net/http"
	"strconv"

	"github.com/senclaw/sandbox/app/principal"
)

// whoami answers who sent the request. With ?tool=NAME it also decides
// whether that principal may call the MCP tool NAME now (its scope and
// its tool policy): 403 naming what is missing, recorded as a security
// event. The MCP faces ask it before each tool call, so that the engine,
// not the face, decides, with the policy of the moment.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	p := Principal(r.Context())
	if tool := r.URL.Query().Get("tool"); tool != "" {
		scope, ok := principal.ToolScope(tool)
		if !ok {
			return &badRequest{field: "tool", msg: "tool " + strconv.Quote(tool) + ": no such tool"}
		}
		if !p.Holds(scope) {
			return &principal.DeniedError{Principal: p, Scope: scope, What: "the tool " + tool}
		}
		if !p.AllowsTool(tool) {
			return &principal.DeniedError{Principal: p, Tool: tool}
		}
	}
	out := Whoami{Principal: p, Scopes: []principal.Scope{}}
	for _, sc := range principal.Scopes {
		if p.Holds(sc) && sc != principal.Public {
			out.Scopes = append(out.Scopes, sc)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
