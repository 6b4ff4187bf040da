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

// runLog answers GET /runs/{id}/log: a part of a run's output (?offset,
// negative from the end; ?limit bytes, default 128 KiB): a background
// run's log, what a foreground run going on writes, or what a finished
// run's record keeps. With ?follow=1 it is an NDJSON stream of {"data"}
// lines as the output grows ("stream": "stderr" on the stderr of a
// finished foreground run; {"skipped": N} where N bytes were not kept),
// ended by {"end": record} when the run is over.
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
	out, err := s.e.OpenRunLog(id)
	if err != nil {
		return err
	}
	part, err := out.Read(offset, limit)
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
	next := max(0, part.Offset) // where the reader is
	if offset >= 0 {
		next = offset
	}
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		if err := sendLogPart(enc, part, next); err != nil {
			return nil // the reader went away
		}
		next = part.Offset + int64(len(part.Data))
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
		if part, err = out.Read(next, limit); err != nil {
			_ = enc.Encode(map[string]any{"error": errorBody{Error: err.Error()}})
			return nil
		}
	}
}

// sendLogPart writes part as the follow stream's lines for a reader at
// next: what was not kept before it, its stdout, its stderr.
func sendLogPart(enc *json.Encoder, part *app.RunLog, next int64) error {
	if part.Offset > next {
		if err := enc.Encode(map[string]int64{"skipped": part.Offset - next}); err != nil {
			return err
		}
	}
	stdout, stderr := part.Data, ""
	if at := part.StderrAt; at != nil {
		cut := min(max(*at-part.Offset, 0), int64(len(part.Data)))
		stdout, stderr = part.Data[:cut], part.Data[cut:]
	}
	if stdout != "" {
		if err := enc.Encode(map[string]string{"data": stdout}); err != nil {
			return err
		}
	}
	if stderr != "" {
		return enc.Encode(map[string]string{"data": stderr, "stream": "stderr"})
	}
	return nil
}
