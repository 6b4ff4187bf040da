package api

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/spaceapps"
)

// Space Apps under /api/space/apps/ (app/spaceapps): the same
// authentication, Host and Origin checks, and 503 when the engine could
// not start, as /api/sandbox/. An app's own token (daemonApi) reaches only
// its runtime and logs (appToken routes), and answers 403 everywhere else.

const spacePrefix = "/api/space/apps"

// spaceRoute registers h for pattern under /api/space/apps.
func (s *Server) spaceRoute(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
	method, path, _ := strings.Cut(pattern, " ")
	full := method + " " + strings.TrimSuffix(spacePrefix+path, "/")
	s.table = append(s.table, full)
	byApp := strings.Contains(path, "{id}")
	s.handle(full, func(w http.ResponseWriter, r *http.Request) {
		if s.e == nil || s.apps == nil {
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "Space Apps unavailable: the sandbox engine could not start: " + errText(s.opts.EngineErr) + " (see the daemon's log)"})
			return
		}
		if byApp {
			// Another tenant's app answers as an unknown id would.
			id := r.PathValue("id")
			if tenant, ok := s.apps.TenantOf(id); ok && !Principal(r.Context()).Sees(tenant) {
				s.writeErr(w, r, &app.NotFoundError{Kind: "Space App", ID: id, CrossTenant: true})
				return
			}
		}
		if err := h(w, r); err != nil {
			s.writeErr(w, r, err)
		}
	})
}

func (s *Server) spaceRoutes() {
	s.spaceRoute("GET /", s.listApps)
	s.spaceRoute("POST /", s.registerApp)
	s.spaceRoute("GET /{id}", func(w http.ResponseWriter, r *http.Request) error {
		d, err := s.apps.Get(r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, d)
		return nil
	})
	s.spaceRoute("DELETE /{id}", func(w http.ResponseWriter, r *http.Request) error {
		purge, _ := strconv.ParseBool(r.URL.Query().Get("purge"))
		files, err := s.apps.Remove(r.Context(), r.PathValue("id"), purge)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": r.PathValue("id"), "files": files})
		return nil
	})
	s.spaceRoute("POST /{id}/start", func(w http.ResponseWriter, r *http.Request) error {
		return s.startApp(w, r, s.apps.Start)
	})
	s.spaceRoute("POST /{id}/restart", func(w http.ResponseWriter, r *http.Request) error {
		return s.startApp(w, r, s.apps.Restart)
	})
	s.spaceRoute("POST /{id}/stop", func(w http.ResponseWriter, r *http.Request) error {
		v, err := s.apps.Stop(r.Context(), r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "app": v})
		return nil
	})
	s.spaceRoute("GET /{id}/runtime", func(w http.ResponseWriter, r *http.Request) error {
		rt, err := s.apps.Runtime(r.Context(), r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, rt)
		return nil
	})
	s.spaceRoute("GET /{id}/logs", s.appLogs)
	s.spaceRoute("DELETE /{id}/logs", func(w http.ResponseWriter, r *http.Request) error {
		if err := s.apps.ClearLogs(r.PathValue("id")); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "cleared": r.PathValue("id")})
		return nil
	})
	s.spaceRoute("GET /{id}/sandbox", func(w http.ResponseWriter, r *http.Request) error {
		v, err := s.apps.Sandbox(r.Context(), r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	})
	s.spaceRoute("PUT /{id}/sandbox", func(w http.ResponseWriter, r *http.Request) error {
		var p spaceapps.SandboxPatch
		if err := decode(r, &p); err != nil {
			return err
		}
		reply, err := s.apps.PutSandbox(r.Context(), r.PathValue("id"), p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, reply)
		return nil
	})
	s.spaceRoute("GET /{id}/isolation", func(w http.ResponseWriter, r *http.Request) error {
		v, err := s.apps.Isolation(r.Context(), r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	})
}

func (s *Server) listApps(w http.ResponseWriter, r *http.Request) error {
	apps, ov := s.apps.List(r.Context(), tenantFilter(r))
	writeJSON(w, http.StatusOK, AppList{Apps: apps, Overview: ov})
	return nil
}

// registerApp registers from a folder ({dir, inPlace, env} as JSON), or
// from a zip: the body itself (application/zip), or a multipart form
// with a "file" part and an optional "env" part (a JSON object).
func (s *Server) registerApp(w http.ResponseWriter, r *http.Request) error {
	ctype, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var reply *spaceapps.RegisterReply
	var err error
	switch ctype {
	case "application/zip", "application/x-zip-compressed", "application/octet-stream":
		reply, err = s.apps.RegisterZip(r.Context(), r.Body, nil)
	case "multipart/form-data":
		reply, err = s.registerMultipart(r, params["boundary"])
	case "application/json", "":
		var req spaceapps.RegisterRequest
		if err := decode(r, &req); err != nil {
			return err
		}
		reply, err = s.apps.Register(r.Context(), req)
	default:
		return &badRequest{field: "Content-Type", msg: "Content-Type " + strconv.Quote(ctype) + ": send JSON ({\"dir\": ...}), a zip (application/zip), or a multipart form with a file part"}
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if reply.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, reply)
	return nil
}

func (s *Server) registerMultipart(r *http.Request, boundary string) (*spaceapps.RegisterReply, error) {
	if boundary == "" {
		return nil, &badRequest{field: "Content-Type", msg: "the multipart form has no boundary"}
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, &badRequest{msg: "the multipart form cannot be read: " + err.Error()}
	}
	var env map[string]string
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, &badRequest{field: "file", msg: "the form has no file part (the app's zip)"}
		}
		if err != nil {
			return nil, &badRequest{msg: "the multipart form cannot be read: " + err.Error()}
		}
		switch part.FormName() {
		case "env":
			if err := json.NewDecoder(io.LimitReader(part, 1<<20)).Decode(&env); err != nil {
				return nil, &badRequest{field: "env", msg: "env: must be a JSON object of strings: " + err.Error()}
			}
		case "file":
			// The file comes last in a browser's FormData when env is
			// appended first; a file before env registers without it.
			return s.apps.RegisterZip(r.Context(), part, env)
		}
	}
}

func (s *Server) startApp(w http.ResponseWriter, r *http.Request, start func(context.Context, string, bool) (*spaceapps.StartReply, error)) error {
	wait := true
	if v := r.URL.Query().Get("wait"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return &badRequest{field: "wait", msg: "wait " + strconv.Quote(v) + ": must be true or false"}
		}
		wait = b
	}
	reply, err := start(r.Context(), r.PathValue("id"), wait)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// appLogs answers the end of the log (?limit bytes, default 128 KiB, at
// most 1 MiB) as JSON, or with ?follow=1 as a stream of NDJSON lines: the
// first is that same JSON, each next one {"text": "..."} with what the
// app wrote since, until the client goes away.
func (s *Server) appLogs(w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r, "limit", 0, 1, spaceapps.MaxLogRead)
	if err != nil {
		return err
	}
	follow, _ := strconv.ParseBool(r.URL.Query().Get("follow"))
	id := r.PathValue("id")
	if !follow {
		c, err := s.apps.Logs(id, limit)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, c)
		return nil
	}
	start, more, stop, err := s.apps.FollowLogs(id, limit)
	if err != nil {
		return err
	}
	defer stop()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	_ = enc.Encode(start)
	if flusher != nil {
		flusher.Flush()
	}
	for {
		select {
		case <-r.Context().Done():
			return nil
		case b := <-more:
			if err := enc.Encode(map[string]string{"text": strings.ToValidUTF8(string(b), "\uFFFD")}); err != nil {
				return nil
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}
