package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/scheduler"
)

// scheduleRoutes are the scheduled scripts.
func (s *Server) scheduleRoutes() {
	s.route("GET /schedules", s.withScheduler(s.listSchedules))
	s.route("POST /schedules", s.withScheduler(s.createSchedule))
	s.route("GET /schedules/{id}", s.withScheduler(s.getSchedule))
	s.route("PATCH /schedules/{id}", s.withScheduler(s.updateSchedule))
	s.route("DELETE /schedules/{id}", s.withScheduler(s.deleteSchedule))
	s.route("POST /schedules/{id}/pause", s.withScheduler(s.pauseSchedule))
	s.route("POST /schedules/{id}/resume", s.withScheduler(s.resumeSchedule))
	s.route("POST /schedules/{id}/run", s.withScheduler(s.runSchedule))
	s.route("GET /schedules/{id}/history", s.withScheduler(s.scheduleHistory))
}

// withScheduler answers 503 when this server has no scheduler (a daemon
// whose engine started without one).
func (s *Server) withScheduler(h func(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.opts.Scheduler == nil {
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "the scheduler is not running in this daemon (see the daemon's log)"})
			return nil
		}
		if idOrName := r.PathValue("id"); idOrName != "" {
			// A unique schedule name works wherever an id does.
			id, err := s.opts.Scheduler.Resolve(idOrName)
			if err != nil {
				return err
			}
			r.SetPathValue("id", id)
		}
		return h(s.opts.Scheduler, w, r)
	}
}

func (s *Server) listSchedules(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"schedules": sch.List(r.Context(), tenantFilter(r))})
	return nil
}

func (s *Server) createSchedule(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	var spec scheduler.Spec
	if err := decode(r, &spec); err != nil {
		return err
	}
	v, notes, err := sch.Create(r.Context(), spec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ScheduleReply{Schedule: v, Note: strings.Join(notes, "; ")})
	return nil
}

func (s *Server) getSchedule(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	v, err := sch.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) updateSchedule(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	var spec scheduler.Spec
	if err := decode(r, &spec); err != nil {
		return err
	}
	v, notes, err := sch.Update(r.Context(), r.PathValue("id"), spec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ScheduleReply{Schedule: v, Note: strings.Join(notes, "; ")})
	return nil
}

func (s *Server) deleteSchedule(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	if err := sch.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": r.PathValue("id")})
	return nil
}

func (s *Server) pauseSchedule(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	v, err := sch.Pause(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) resumeSchedule(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	v, err := sch.Resume(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// runSchedule fires a schedule now. ?wait=1 answers with the run when it
// ends (as run-once does, 403 with the record when it was refused);
// without it the answer is 202 at once and the run goes on.
func (s *Server) runSchedule(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	wait, _ := strconv.ParseBool(r.URL.Query().Get("wait"))
	id := r.PathValue("id")
	res, err := sch.RunNow(r.Context(), id, wait)
	if err != nil {
		if res != nil && app.IsRefused(err) {
			writeJSON(w, http.StatusForbidden, errorBody{Error: err.Error(), Refused: true, Run: &res.Record})
			return nil
		}
		return err
	}
	if !wait {
		v, err := sch.Get(r.Context(), id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"started": true, "schedule": v})
		return nil
	}
	writeJSON(w, http.StatusOK, reply(res))
	return nil
}

func (s *Server) scheduleHistory(sch *scheduler.Scheduler, w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r, "limit", 50, 1, 100)
	if err != nil {
		return err
	}
	h, err := sch.History(r.Context(), r.PathValue("id"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"history": h})
	return nil
}
