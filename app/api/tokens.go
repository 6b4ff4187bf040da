package api

import (
	"encoding/json"
	"net/http"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/tokens"
)

// tokenRoutes are the agent tokens (the owner's alone: tokens:admin).
func (s *Server) tokenRoutes() {
	s.route("GET /tokens", s.withTokens(func(reg *tokens.Registry, w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": reg.List()})
		return nil
	}))
	s.route("POST /tokens", s.withTokens(s.addToken))
	s.route("PATCH /tokens/{id}", s.withTokens(func(reg *tokens.Registry, w http.ResponseWriter, r *http.Request) error {
		tools, err := decodeTools(r)
		if err != nil {
			return err
		}
		v, err := reg.SetTools(r.PathValue("id"), tools)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	}))
	s.route("POST /tokens/{id}/rotate", s.withTokens(func(reg *tokens.Registry, w http.ResponseWriter, r *http.Request) error {
		iss, err := reg.Rotate(r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, iss)
		return nil
	}))
	s.route("DELETE /tokens/{id}", s.withTokens(func(reg *tokens.Registry, w http.ResponseWriter, r *http.Request) error {
		v, err := reg.Remove(r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": v.ID, "name": v.Name})
		return nil
	}))
}

// decodeTools reads {"tools": [...]} (a tool policy) or {"tools": null}
// (none: the scopes decide alone).
func decodeTools(r *http.Request) ([]string, error) {
	var b struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	if len(b.Tools) == 0 {
		return nil, &badRequest{field: "tools", msg: "tools: give the tool policy (a list of tools and groups, [] for none), or null to remove it"}
	}
	var tools []string
	if err := json.Unmarshal(b.Tools, &tools); err != nil {
		return nil, &badRequest{field: "tools", msg: "tools: a list of tool and group names, or null"}
	}
	return tools, nil
}

// withTokens answers 503 when this server has no token registry.
func (s *Server) withTokens(h func(reg *tokens.Registry, w http.ResponseWriter, r *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.opts.Tokens == nil {
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "this daemon keeps no tokens (its engine could not start; see the daemon's log)"})
			return nil
		}
		return h(s.opts.Tokens, w, r)
	}
}

// addToken makes an agent token: {name, tenant?, tools?}. The answer
// holds its secret, shown this once.
func (s *Server) addToken(reg *tokens.Registry, w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Name   string   `json:"name"`
		Tenant string   `json:"tenant"`
		Tools  []string `json:"tools"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	iss, err := reg.Add(b.Name, principal.Agent, b.Tenant, b.Tools)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, iss)
	return nil
}
