package api

import "net/http"

// listCaches answers GET /caches.
func (s *Server) listCaches(w http.ResponseWriter, r *http.Request) error {
	caches, err := s.e.Caches()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"caches": caches})
	return nil
}

// clearCaches answers DELETE /caches (all) and DELETE
// /sandboxes/{id}/cache (the sandbox's).
func (s *Server) clearCaches(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.e.ClearCaches(id); err != nil {
		return err
	}
	if id == "" {
		id = "all"
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "cleared": id})
	return nil
}
