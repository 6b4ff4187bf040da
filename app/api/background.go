package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/senclaw/sandbox/app"
)

// followPoll is how often a followed log is looked at for new bytes.
const followPoll = 200 * time.Millisecond

func (s *Server) killRun(w http.ResponseWriter, r *http.Request) error {
	killed, err := s.e.KillRun(r.PathValue("id"))
	if err != nil {
		return err
	}
	msg := "killed"
	if !killed {
		msg = "not running (it had ended)"
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "killed": killed, "run": r.PathValue("id"), "message": msg})
	return nil
}

// runLog answers GET /runs/{id}/log: a part of a background run's log
// (?offset, negative from the end; ?limit bytes, default 128 KiB), or with
// ?follow=1 an NDJSON stream of {"data"} lines as the log grows, ended by
// {"end": record} when the run is over.
func (s *Server) runLog(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	q := r.URL.Query()
	offset := int64(0)
	if v := q.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return &badRequest{field: "offset", msg: "offset " + strconv.Quote(v) + ": must be a whole number of bytes (negative: from the end)"}
		}
		offset = n
	}
	limit, err := intParam(r, "limit", 128<<10, 1, app.MaxLogRead)
	if err != nil {
		return err
	}
	follow, _ := strconv.ParseBool(q.Get("follow"))
	part, err := s.e.ReadRunLog(id, offset, limit)
	if err != nil {
		return err
	}
	if !follow {
		writeJSON(w, http.StatusOK, part)
		return nil
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	next := part.Offset
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		if part.Data != "" {
			if err := enc.Encode(map[string]string{"data": part.Data}); err != nil {
				return nil // the reader went away
			}
			next = part.Offset + int64(len(part.Data))
		}
		if fl != nil {
			fl.Flush()
		}
		if !part.Running && next >= part.Size {
			rec, err := s.e.Run(id)
			if err == nil {
				_ = enc.Encode(map[string]any{"end": rec})
			}
			return nil
		}
		if part.Data == "" || next >= part.Size {
			select {
			case <-r.Context().Done():
				return nil
			case <-tick.C:
			}
		}
		if part, err = s.e.ReadRunLog(id, next, limit); err != nil {
			_ = enc.Encode(map[string]any{"error": errorBody{Error: err.Error()}})
			return nil
		}
	}
}
