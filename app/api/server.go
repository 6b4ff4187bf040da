// Package api is the engine's HTTP face: the REST API, the dashboard's files
// and its login.
//
// The REST API is under /api/sandbox/. Authentication (Unix socket peer
// credentials, bearer tokens, one-time login codes) and Host/Origin checks
// make sure that neither another user nor a web page can drive the engine.
package api

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/autostart"
	"github.com/senclaw/sandbox/app/doctor"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/scheduler"
	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/app/tenants"
	"github.com/senclaw/sandbox/app/tokens"
)

// Options configure a Server.
type Options struct {
	// Engine serves the API. When it is nil, EngineErr says why, and the
	// whole /api/sandbox/ subtree answers 503 with that reason.
	Engine    *app.Engine
	EngineErr error
	// Token is the bearer token TCP clients must present.
	Token   string
	Version string
	Logger  *slog.Logger
	// Dashboard holds the built frontend (index.html at its root); nil
	// serves a page that says the dashboard was not built in.
	Dashboard fs.FS
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnStop is called by POST /api/sandbox/daemon/stop.
	OnStop func()
	// Autostart is the owner's login autostart entry ("Start at login");
	// nil when the daemon knows no user config dir.
	Autostart *autostart.Entry
	// Scheduler serves /schedules; nil answers them with 503.
	Scheduler *scheduler.Scheduler
	// Apps is the engine's Space Apps supervisor, served under
	// /api/space/apps/ (503 when it is nil).
	Apps *spaceapps.Supervisor
	// Doctor serves /doctor, also when the engine could not start.
	Doctor *doctor.Doctor
	// Tokens are the agent and tenant tokens (app/tokens); nil knows
	// none, and answers /tokens with 503. Tenants are the tenants
	// (app/tenants); nil answers /tenants with 503.
	Tokens  *tokens.Registry
	Tenants *tenants.Directory
}

// Server answers the API.
type Server struct {
	opts     Options
	log      *slog.Logger
	e        *app.Engine
	apps     *spaceapps.Supervisor
	sessions *sessions
	pages    loginPages
	started  time.Time
	mux      *http.ServeMux
	// rejected keeps tokens nobody has to one event a minute per source.
	rejected onceAMinute
	// lan guards the LAN listener; lanInfo says where it is (nil: off).
	lan     *lanGuard
	lanInfo atomic.Pointer[LANInfo]
	// table lists the API's routes ("METHOD /path"), for the OpenAPI test;
	// guarded every pattern served behind the scope table.
	table   []string
	guarded []string
}

// New returns a Server.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, log: opts.Logger, e: opts.Engine, apps: opts.Apps, sessions: newSessions(opts.Now), started: opts.Now(), lan: newLANGuard(opts.Now)}
	s.mux = http.NewServeMux()
	s.routes()
	return s
}

// Apps is the Space Apps supervisor the server answers for (nil when
// there is none).
func (s *Server) Apps() *spaceapps.Supervisor { return s.apps }

// maxBody bounds request bodies (file writes are the largest).
const maxBody = app.MaxFileWrite*4/3 + 1<<20

// errorBody is every error answer.
type errorBody struct {
	Error string `json:"error"`
	// Field names the bad input, when there is one.
	Field string `json:"field,omitempty"`
	// Scope is the scope a refused request needed (403), Tool the tool
	// its principal's tool policy leaves out.
	Scope string `json:"scope,omitempty"`
	Tool  string `json:"tool,omitempty"`
	// Refused is true when a run was refused by policy or missing
	// isolation; Run is its record.
	Refused bool           `json:"refused,omitempty"`
	Run     *app.RunRecord `json:"run,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError maps an engine error to a status and a body.
func writeError(w http.ResponseWriter, err error) {
	var (
		fe  *app.FieldError
		nf  *app.NotFoundError
		ref *app.RefusedError
		cf  *app.ConflictError
		le  *app.LimitError
		be  *badRequest
		ue  *app.UnreachableError
	)
	switch {
	case errors.As(err, &ue): // a sandbox's engine elsewhere does not answer
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error()})
	case errors.As(err, &le): // before ref: a run past a bound is also a refusal
		writeJSON(w, http.StatusTooManyRequests, errorBody{Error: err.Error(), Field: le.Setting, Refused: errors.As(err, &ref)})
	case errors.As(err, &fe):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error(), Field: fe.Field})
	case errors.As(err, &be):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: be.msg, Field: be.field})
	case errors.As(err, &nf):
		writeJSON(w, http.StatusNotFound, errorBody{Error: err.Error()})
	case errors.As(err, &ref):
		writeJSON(w, http.StatusForbidden, errorBody{Error: err.Error(), Refused: true})
	case errors.As(err, &cf):
		writeJSON(w, http.StatusConflict, errorBody{Error: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: err.Error()})
	}
}

// badRequest is a malformed request (not JSON, wrong types).
type badRequest struct{ field, msg string }

func (b *badRequest) Error() string { return b.msg }

// decode reads a JSON body into v, refusing unknown fields so that a typo
// is an error rather than a silently ignored setting.
func decode(r *http.Request, v any) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return &badRequest{field: ute.Field, msg: "field " + ute.Field + ": expected " + ute.Type.String() + ", got " + ute.Value}
		}
		return &badRequest{msg: "the request body is not valid JSON: " + err.Error()}
	}
	if dec.More() {
		return &badRequest{msg: "the request body has more than one JSON value"}
	}
	return nil
}

// ServeHTTP makes Server an http.Handler: authentication first, then the
// routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := int64(maxBody)
	if r.Method == http.MethodPost && r.URL.Path == spacePrefix {
		limit = spaceapps.MaxZipBytes + 1<<20 // a Space App's zip
	}
	if r.Method == http.MethodPut && isRaw(r) {
		limit = 1 << 62 // a streamed file (senclaw cp): the workspace's quota bounds it
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	p, ok := s.authorize(w, r)
	if !ok {
		return
	}
	s.mux.ServeHTTP(w, r.WithContext(principal.With(r.Context(), p)))
}
