package api

import (
	_ "embed"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
)

// route registers h for pattern under /api/sandbox. Every API handler
// answers 503 with the reason when the engine could not start.
func (s *Server) route(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
	method, path, _ := strings.Cut(pattern, " ")
	s.table = append(s.table, method+" /api/sandbox"+path)
	bySandbox := strings.HasPrefix(path, "/sandboxes/{id}")
	byRun := strings.HasPrefix(path, "/runs/{id}")
	// What a daemon whose engine cannot start must still
	// answer: its health (with the reason), how to stop it, its doctor.
	engineless := engineless[method+" "+path]
	s.handle(method+" /api/sandbox"+path, func(w http.ResponseWriter, r *http.Request) {
		if s.e == nil && !engineless {
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "the daemon runs, but its engine cannot: " + errText(s.opts.EngineErr) + "; nothing was done (senclaw doctor says more; senclaw stop stops the daemon)"})
			return
		}
		if bySandbox {
			// A unique sandbox name works wherever an id does. An id no
			// sandbox has any more (a one-shot run's, whose events stay)
			// goes on to the handler as it is. Another tenant's answers
			// as an unknown id would.
			id, err := s.e.ResolveSandboxFor(Principal(r.Context()), r.PathValue("id"))
			var nf *app.NotFoundError
			switch {
			case errors.As(err, &nf) && nf.CrossTenant:
				s.writeErr(w, r, err)
				return
			case errors.As(err, &nf):
			case err != nil:
				writeError(w, err)
				return
			default:
				r.SetPathValue("id", id)
			}
		}
		if byRun {
			// Another tenant's run answers as an unknown id would.
			if run, err := s.e.Run(r.PathValue("id")); err == nil && !Principal(r.Context()).Sees(run.Tenant) {
				s.writeErr(w, r, &app.NotFoundError{Kind: "run", ID: r.PathValue("id"), CrossTenant: true})
				return
			}
		}
		if err := h(w, r); err != nil {
			s.writeErr(w, r, err)
		}
	})
}

// engineless are the routes that answer when the engine could not start.
var engineless = map[string]bool{"GET /health": true, "GET /whoami": true, "POST /daemon/stop": true, "GET /doctor": true, "POST /doctor/repair": true}

// health answers GET /health: 200 while the engine runs; 503 with the
// reason ("store damaged: ...") when it could not start, so that a client
// knows a daemon answers and why it cannot run anything.
func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	if s.e == nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "error": errText(s.opts.EngineErr)})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	return nil
}

// publicHealth answers GET /health, outside the API and without a
// token, for monitors and scripts: up or down, and nothing else (why the
// engine could not start names paths; /api/sandbox/health says it).
func (s *Server) publicHealth(w http.ResponseWriter, r *http.Request) {
	status := http.StatusOK
	if s.e == nil {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]bool{"ok": s.e != nil})
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

func (s *Server) routes() {
	s.route("GET /status", s.status)
	s.route("GET /health", s.health)
	s.route("GET /whoami", s.whoami)
	s.route("GET /caps", func(w http.ResponseWriter, r *http.Request) error {
		refresh, _ := strconv.ParseBool(r.URL.Query().Get("refresh"))
		writeJSON(w, http.StatusOK, s.e.Capabilities(r.Context(), refresh))
		return nil
	})
	s.route("GET /languages", func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, map[string]any{"languages": app.Languages()})
		return nil
	})
	s.route("GET /fs-modes", func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, map[string]any{"fsModes": app.FsModeLabels()})
		return nil
	})
	s.route("GET /sandboxes", s.listSandboxes)
	s.route("POST /sandboxes", s.createSandbox)
	s.route("GET /sandboxes/{id}", s.getSandbox)
	s.route("PATCH /sandboxes/{id}", s.updateSandbox)
	s.route("DELETE /sandboxes/{id}", s.deleteSandbox)
	s.route("POST /sandboxes/{id}/start", s.startSandbox)
	s.route("POST /sandboxes/{id}/stop", s.stopSandbox)
	s.route("POST /sandboxes/{id}/recreate", s.recreateSandbox)
	s.route("POST /sandboxes/{id}/exec", s.exec)
	s.route("POST /sandboxes/{id}/run", s.runCode)
	s.route("POST /sandboxes/{id}/install", s.install)
	s.route("GET /sandboxes/{id}/files", s.listFiles)
	s.route("GET /sandboxes/{id}/file", s.readFile)
	s.route("PUT /sandboxes/{id}/file", s.writeFile)
	s.route("DELETE /sandboxes/{id}/file", s.deleteFile)
	s.route("POST /sandboxes/{id}/mkdir", s.mkdir)
	s.route("GET /sandboxes/{id}/stats", s.stats)
	s.route("POST /sandboxes/{id}/kill", s.kill)
	s.route("GET /sandboxes/{id}/mounts", s.listMounts)
	s.route("POST /sandboxes/{id}/mounts", s.addMount)
	s.route("POST /sandboxes/{id}/mounts/remove", s.removeMount)
	s.route("POST /sandboxes/{id}/fs-mode", s.setFsMode)
	s.route("POST /sandboxes/{id}/ports", s.setPorts)
	s.route("POST /sandboxes/{id}/trace", s.setTrace)
	s.route("GET /sandboxes/{id}/events", s.events)
	s.route("DELETE /sandboxes/{id}/events", s.clearEvents)
	s.route("DELETE /sandboxes/{id}/cache", s.clearCaches)
	s.route("GET /caches", s.listCaches)
	s.route("DELETE /caches", s.clearCaches)
	s.route("GET /settings", func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, s.e.Settings())
		return nil
	})
	s.route("PUT /settings", s.putSettings)
	s.route("GET /exec-policy", func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, s.e.Policy())
		return nil
	})
	s.route("PUT /exec-policy", s.putPolicy)
	s.route("GET /runs", s.listRuns)
	s.route("GET /runs/{id}", s.getRun)
	s.route("GET /runs/{id}/log", s.runLog)
	s.route("POST /runs/{id}/kill", s.killRun)
	s.route("POST /run-once", s.runOnce)
	s.route("POST /agent-shell", s.agentShell)
	s.route("POST /agent-shell/check", s.agentShellCheck)
	s.route("POST /guard/check", s.guardCheck)
	s.route("POST /policy/check", s.policyCheck)
	s.route("POST /policy/learn", s.policyLearn)
	s.route("POST /policy/apply", s.policyApply)
	s.route("GET /integrations", s.integrations)
	s.route("POST /stop-all", func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "stopped": s.e.StopAll(r.Context())})
		return nil
	})
	s.route("GET /autostart", s.getAutostart)
	s.route("PUT /autostart", s.putAutostart)
	s.spaceRoutes() // space.go
	s.route("POST /login-codes", s.loginCode)
	s.route("POST /daemon/stop", s.daemonStop)
	s.scheduleRoutes() // schedules.go
	s.secretRoutes()   // secrets.go
	s.doctorRoutes()   // doctor.go
	s.tokenRoutes()    // tokens.go
	s.tenantRoutes()   // tenants.go
	s.route("GET /security-events", s.securityEvents)
	s.handle("GET /api/sandbox/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})
	s.handle("GET /health", s.publicHealth)
	s.handle("GET /login", s.login)
	s.handle("POST /login", s.loginPosted)
	s.handle("GET /", s.page)
}

// openAPI describes the API; a test keeps it and the routes in step.
//
//go:embed openapi.json
var openAPI []byte

func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	caps := s.e.Capabilities(r.Context(), false)
	all, err := s.e.List()
	if err != nil {
		return err
	}
	st := Status{Version: s.opts.Version, State: caps.State, Summary: caps.Summary, UptimeSec: int64(s.opts.Now().Sub(s.started) / time.Second), LAN: s.lanInfo.Load()}
	p := Principal(r.Context())
	// Where the engine keeps its data and which process it is are the
	// owner's to know; the queue's counts are the whole engine's, which
	// would tell a tenant what the others run.
	if p.IsOwner() {
		st.DataDir, st.Pid = s.e.DataDir(), pid()
	}
	if p.Tenant == "" {
		st.Runs = s.e.Queue()
	}
	for _, sb := range all {
		if !p.Sees(sb.Tenant) {
			continue // another tenant's: not counted for this one
		}
		st.Sandboxes++
		if sb.State == app.StateRunning {
			st.Running++
		}
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) error {
	// Merge: start from the current settings so that a partial body
	// changes only what it names.
	next := s.e.Settings()
	if err := decode(r, &next); err != nil {
		return err
	}
	saved, err := s.e.SetSettings(next)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, saved)
	return nil
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) error {
	next := s.e.Policy()
	if err := decode(r, &next); err != nil {
		return err
	}
	saved, err := s.e.SetPolicy(next)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, saved)
	return nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r, 50)
	if err != nil {
		return err
	}
	switch st := r.URL.Query().Get("state"); st {
	case "":
	case "running":
		all, err := s.e.BackgroundRuns()
		if err != nil {
			return err
		}
		runs := []app.RunRecord{}
		for _, run := range all {
			if q.AllTenants || run.Tenant == q.Tenant {
				runs = append(runs, run)
			}
		}
		writeJSON(w, http.StatusOK, app.RunPage{Runs: runs, Total: len(runs)})
		return nil
	default:
		return &badRequest{field: "state", msg: "state " + strconv.Quote(st) + ": the only filter is running (the background runs going on now)"}
	}
	if q.Limit > 5000 {
		return &badRequest{field: "limit", msg: "limit " + strconv.Itoa(q.Limit) + ": must be a whole number from 1 to 5000"}
	}
	q.Source = r.URL.Query().Get("source") // the tray: the scheduler's runs
	if v := r.URL.Query().Get("refused"); v != "" {
		if q.Refused, err = strconv.ParseBool(v); err != nil {
			return &badRequest{field: "refused", msg: "refused " + strconv.Quote(v) + ": must be true or false"}
		}
	}
	page, err := s.e.RunsPage(r.URL.Query().Get("sandboxId"), q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := s.e.Run(r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// intParam reads an integer query parameter, def when absent, refusing
// values outside lo..hi.
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, &badRequest{field: name, msg: name + " " + strconv.Quote(v) + ": must be a whole number from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)}
	}
	return n, nil
}
