package api

import (
	"net/http"

	"github.com/senclaw/sandbox/app"
)

func (s *Server) setTrace(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Enabled bool `json:"enabled"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	note, err := s.e.SetTrace(r.PathValue("id"), b.Enabled)
	if err != nil {
		return err
	}
	state := "OFF"
	if b.Enabled {
		state = "ON"
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "sandbox": r.PathValue("id"), "tracing": state, "note": note})
	return nil
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r, "limit", 500, 1, 5000)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	res, err := s.e.Events(app.EventQuery{SandboxID: r.PathValue("id"), RunID: q.Get("runId"), KindPrefix: q.Get("kind"), Limit: limit})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) clearEvents(w http.ResponseWriter, r *http.Request) error {
	n, err := s.e.ClearEvents(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": n})
	return nil
}
