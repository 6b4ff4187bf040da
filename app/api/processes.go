package api

import (
	"net/http"
)

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.e.Stats(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Pid int `json:"pid"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	n, err := s.e.Kill(r.Context(), r.PathValue("id"), b.Pid)
	if err != nil {
		return err
	}
	if b.Pid == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "groups": n})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "killed": b.Pid})
	return nil
}
