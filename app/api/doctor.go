package api

import (
	"net/http"
)

// doctorRoutes serve senclaw doctor. They answer when the
// engine could not start: a damaged store is what the doctor repairs.
func (s *Server) doctorRoutes() {
	s.route("GET /doctor", func(w http.ResponseWriter, r *http.Request) error {
		if s.opts.Doctor == nil {
			return &badRequest{msg: "this server has no doctor"}
		}
		writeJSON(w, http.StatusOK, s.opts.Doctor.Check(r.Context()))
		return nil
	})
	s.route("POST /doctor/repair", func(w http.ResponseWriter, r *http.Request) error {
		if s.opts.Doctor == nil {
			return &badRequest{msg: "this server has no doctor"}
		}
		rep, err := s.opts.Doctor.Repair(r.Context())
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, rep)
		if rep.Restart && s.opts.OnStop != nil {
			// The repaired store is opened by the next daemon.
			go s.opts.OnStop()
		}
		return nil
	})
}
