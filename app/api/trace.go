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
	if err := s.seesRunsOf(r, r.PathValue("id"), q.Get("runId")); err != nil {
		return err
	}
	res, err := s.e.Events(app.EventQuery{SandboxID: r.PathValue("id"), RunID: q.Get("runId"), KindPrefix: q.Get("kind"), Limit: limit})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) clearEvents(w http.ResponseWriter, r *http.Request) error {
	if err := s.seesRunsOf(r, r.PathValue("id"), ""); err != nil {
		return err
	}
	n, err := s.e.ClearEvents(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": n})
	return nil
}

// seesRunsOf refuses, as an unknown id, the events of a sandbox that is
// gone (a one-shot's, whose events stay) when its runs, or run runID, are
// another tenant's. A sandbox that exists was judged by the route.
func (s *Server) seesRunsOf(r *http.Request, sandboxID, runID string) error {
	p := Principal(r.Context())
	if p.IsOwner() {
		return nil
	}
	if runID != "" {
		if run, err := s.e.Run(runID); err == nil && !p.Sees(run.Tenant) {
			return &app.NotFoundError{Kind: "run", ID: runID, CrossTenant: true}
		}
	}
	if _, err := s.e.Get(sandboxID); err == nil {
		return nil
	}
	page, err := s.e.RunsPage(sandboxID, app.ListQuery{Limit: 1, AllTenants: true})
	if err != nil || len(page.Runs) == 0 {
		return err
	}
	if !p.Sees(page.Runs[0].Tenant) {
		return &app.NotFoundError{Kind: "sandbox", ID: sandboxID, CrossTenant: true}
	}
	return nil
}
