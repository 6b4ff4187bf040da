package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/senclaw/sandbox/app/secevents"
)

// securityEvents answers GET /security-events (the owner's alone): the
// stored security events, newest first (?limit 1-1000, default 50;
// ?before an id, for the page after; ?principal, ?kind, ?tenant to
// filter). With ?follow=1 it is an NDJSON stream: the page, oldest first,
// then each event that matches as it is recorded, until the client goes.
func (s *Server) securityEvents(w http.ResponseWriter, r *http.Request) error {
	q, err := securityQuery(r)
	if err != nil {
		return err
	}
	rec := s.e.Security()
	follow, _ := strconv.ParseBool(r.URL.Query().Get("follow"))
	if !follow {
		page, err := rec.List(q)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, page)
		return nil
	}
	// Follow first, list second: nothing recorded in between is lost
	// (one seen twice is sent once: ids only grow).
	live, stop := rec.Follow()
	defer stop()
	page, err := rec.List(q)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	last := ""
	events := slices.Clone(page.Events)
	slices.Reverse(events)
	for _, ev := range events {
		_ = enc.Encode(ev)
		last = ev.ID
	}
	if fl != nil {
		fl.Flush()
	}
	for {
		select {
		case <-r.Context().Done():
			return nil
		case ev := <-live:
			if ev.ID <= last || !secevents.Matches(q, ev) {
				continue
			}
			if err := enc.Encode(ev); err != nil {
				return nil
			}
			last = ev.ID
			if fl != nil {
				fl.Flush()
			}
		}
	}
}

// securityQuery reads the filters of GET /security-events.
func securityQuery(r *http.Request) (secevents.Query, error) {
	limit, err := intParam(r, "limit", 50, 1, 1000)
	if err != nil {
		return secevents.Query{}, err
	}
	q := r.URL.Query()
	out := secevents.Query{Limit: limit, Before: q.Get("before"), Principal: q.Get("principal"), Kind: q.Get("kind"), Tenant: q.Get("tenant")}
	for name, v := range map[string]string{"before": out.Before, "principal": out.Principal, "kind": out.Kind, "tenant": out.Tenant} {
		if len(v) > 200 {
			return out, &badRequest{field: name, msg: name + ": at most 200 characters"}
		}
	}
	return out, nil
}
