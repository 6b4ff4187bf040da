package api

import (
	"net/http"

	"github.com/senclaw/sandbox/app/apitype"
)

// secretRoutes are the engine's secrets: the owner adds, rotates and
// removes them (secrets:admin); agents list their names; a list never
// holds a value.
func (s *Server) secretRoutes() {
	s.route("GET /secrets", s.listSecrets)
	s.route("POST /secrets", s.addSecret)
	s.route("PUT /secrets/{name}", s.rotateSecret)
	s.route("DELETE /secrets/{name}", s.removeSecret)
}

// The secrets' wire types are apitype's.
type (
	SecretsReply     = apitype.SecretsReply
	AddSecretBody    = apitype.AddSecretBody
	RotateSecretBody = apitype.RotateSecretBody
)

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) error {
	list, err := s.e.Secrets()
	if err != nil {
		return err
	}
	// The secrets are the owner's: an agent of the owner's sees their
	// names, to ask for one; a tenant, which may not use them, none.
	if p := Principal(r.Context()); p.Tenant != "" {
		list = []apitype.SecretInfo{}
	}
	writeJSON(w, http.StatusOK, SecretsReply{Secrets: list})
	return nil
}

func (s *Server) addSecret(w http.ResponseWriter, r *http.Request) error {
	var b AddSecretBody
	if err := decode(r, &b); err != nil {
		return err
	}
	info, err := s.e.AddSecret(b.SecretSpec, []byte(b.Value))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, info)
	return nil
}

func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	var b RotateSecretBody
	if err := decode(r, &b); err != nil {
		return err
	}
	info, err := s.e.RotateSecret(r.PathValue("name"), []byte(b.Value))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *Server) removeSecret(w http.ResponseWriter, r *http.Request) error {
	if err := s.e.RemoveSecret(r.PathValue("name")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "removed": r.PathValue("name")})
	return nil
}
