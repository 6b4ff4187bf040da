package api

import (
	"net/http"

	"github.com/senclaw/sandbox/app"
)

// errNoAutostart answers when the daemon knows no autostart directory.
var errNoAutostart = &badRequest{field: "autostart", msg: "this daemon has no user config dir (XDG_CONFIG_HOME or HOME), so it cannot manage the autostart entry"}

// AutostartBody is the body of PUT /autostart.
type AutostartBody struct {
	Enabled *bool `json:"enabled"`
}

func (s *Server) getAutostart(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Autostart == nil {
		return errNoAutostart
	}
	st, err := s.opts.Autostart.State()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) putAutostart(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Autostart == nil {
		return errNoAutostart
	}
	var body AutostartBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Enabled == nil {
		return &badRequest{field: "enabled", msg: "enabled: give true (start the app at login) or false"}
	}
	st, err := s.opts.Autostart.Set(*body.Enabled)
	if err != nil {
		return &app.ConflictError{Reason: err.Error()}
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
