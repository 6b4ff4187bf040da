package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/client"
)

// HTTPOptions configure the MCP Streamable HTTP face that the daemon
// serves at /mcp, next to the REST API and behind its checks.
type HTTPOptions struct {
	// Principal says who sent an authorized request (api.Principal);
	// every session belongs to the principal that opened it.
	Principal func(r *http.Request) string
	// ClientFor returns the engine client the sessions of principal use.
	ClientFor func(principal string) *client.Client
	// Limits returns how long a session may sit idle before it is closed
	// and how many sessions one principal may hold at once. It is read on
	// every use, so a change of the settings applies at once.
	Limits  func() (idle time.Duration, maxSessions int)
	Version string
	Logger  *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SweepEvery is how often idle sessions are looked for (default 30 s).
	SweepEvery time.Duration
}

// HTTPHandler serves the 22 tools over MCP's Streamable HTTP transport:
// the same tool table as the stdio server (New), with sessions, SSE
// streams and resumable streams as the official SDK provides them. On top
// of the SDK it binds each session to the principal that opened it (a
// session id alone is not a credential), bounds the sessions a principal
// holds (429 past it), and closes sessions idle for longer than the
// settings say.
type HTTPHandler struct {
	opts HTTPOptions
	sdk  *sdk.StreamableHTTPHandler
	stop chan struct{}
	once sync.Once

	mu       sync.Mutex
	servers  map[string]*sdk.Server // one per principal: its own client
	sessions map[string]*sessionUse // by session id
}

// sessionUse is what the handler knows of one session.
type sessionUse struct {
	principal string
	last      time.Time // the end of its latest request
	inFlight  int       // POSTs going on (a tool call counts as activity)
}

type principalCtxKey struct{}

// NewHTTPHandler returns the /mcp handler. Close it when the daemon stops.
func NewHTTPHandler(opts HTTPOptions) *HTTPHandler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = 30 * time.Second
	}
	h := &HTTPHandler{opts: opts, stop: make(chan struct{}), servers: map[string]*sdk.Server{}, sessions: map[string]*sessionUse{}}
	h.sdk = sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		p, _ := r.Context().Value(principalCtxKey{}).(string)
		return h.server(p)
	}, &sdk.StreamableHTTPOptions{Logger: opts.Logger, EventStore: sdk.NewMemoryEventStore(nil)})
	go h.sweep()
	return h
}

// Close stops the idle sweep and closes every session.
func (h *HTTPHandler) Close() {
	h.once.Do(func() { close(h.stop) })
	h.mu.Lock()
	servers := make([]*sdk.Server, 0, len(h.servers))
	for _, s := range h.servers {
		servers = append(servers, s)
	}
	h.mu.Unlock()
	for _, s := range servers {
		for ss := range s.Sessions() {
			ss.Close()
		}
	}
}

// server is principal's MCP server, made on first use.
func (h *HTTPHandler) server(principal string) *sdk.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.servers[principal]; ok {
		return s
	}
	s := New(Options{Client: h.opts.ClientFor(principal), Version: h.opts.Version, Logger: h.opts.Logger})
	h.servers[principal] = s
	return s
}

// liveSessions counts principal's open sessions.
func (h *HTTPHandler) liveSessions(principal string) int {
	n := 0
	for range h.server(principal).Sessions() {
		n++
	}
	return n
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal := h.opts.Principal(r)
	if principal == "" || principal == "page" {
		httpError(w, http.StatusUnauthorized, "missing or wrong token: send Authorization: Bearer <token> (the token is in the api-token file of senclaw's config dir)")
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), principalCtxKey{}, principal))
	sid := r.Header.Get("Mcp-Session-Id")
	if sid != "" {
		h.mu.Lock()
		use, ok := h.sessions[sid]
		if !ok || use.principal != principal {
			h.mu.Unlock()
			// The SDK would serve it: a session id is not a credential.
			// One whose opener is not known here is nobody's to use.
			if !ok {
				httpError(w, http.StatusNotFound, "no such MCP session: it ended, or was never opened here; open a session (initialize)")
				return
			}
			httpError(w, http.StatusForbidden, "this MCP session was opened with another token; open a session of your own (initialize)")
			return
		}
		if r.Method == http.MethodPost {
			use.inFlight++
		}
		h.mu.Unlock()
		defer h.done(sid, r.Method == http.MethodPost)
		h.sdk.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost {
		_, max := h.opts.Limits()
		if n := h.liveSessions(principal); max > 0 && n >= max {
			w.Header().Set("Retry-After", "60")
			httpError(w, http.StatusTooManyRequests, "this token already holds "+strconv.Itoa(n)+" MCP sessions, the most it may (the mcpMaxSessions setting); close one (DELETE /mcp with its Mcp-Session-Id) or wait for an idle one to be closed")
			return
		}
	}
	h.sdk.ServeHTTP(&sessionRecorder{ResponseWriter: w, h: h, principal: principal}, r)
}

// done ends a request of session sid.
func (h *HTTPHandler) done(sid string, post bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if use, ok := h.sessions[sid]; ok {
		if post {
			use.inFlight--
		}
		use.last = h.opts.Now()
	}
}

// sessionRecorder notes the session a new request opens, from the
// Mcp-Session-Id header of the answer.
type sessionRecorder struct {
	http.ResponseWriter
	h         *HTTPHandler
	principal string
	noted     bool
}

func (s *sessionRecorder) WriteHeader(code int) {
	if !s.noted {
		s.noted = true
		if sid := s.Header().Get("Mcp-Session-Id"); sid != "" {
			s.h.mu.Lock()
			s.h.sessions[sid] = &sessionUse{principal: s.principal, last: s.h.opts.Now()}
			s.h.mu.Unlock()
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(p []byte) (int, error) {
	if !s.noted {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(p)
}

func (s *sessionRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// sweep closes sessions idle for longer than the setting, and forgets
// sessions that ended.
func (h *HTTPHandler) sweep() {
	tick := time.NewTicker(h.opts.SweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
			h.closeIdle()
		}
	}
}

func (h *HTTPHandler) closeIdle() {
	idle, _ := h.opts.Limits()
	now := h.opts.Now()
	start := now
	h.mu.Lock()
	servers := make(map[string]*sdk.Server, len(h.servers))
	for p, s := range h.servers {
		servers[p] = s
	}
	h.mu.Unlock()
	live := map[string]bool{}
	for _, s := range servers {
		for ss := range s.Sessions() {
			id := ss.ID()
			live[id] = true
			h.mu.Lock()
			use, ok := h.sessions[id]
			stale := ok && idle > 0 && use.inFlight == 0 && now.Sub(use.last) > idle
			h.mu.Unlock()
			if stale {
				h.opts.Logger.Info("Closing an idle MCP session.", "session", id, "principal", use.principal, "idle", now.Sub(use.last).Round(time.Second))
				ss.Close()
				delete(live, id)
			}
		}
	}
	h.mu.Lock()
	for id, use := range h.sessions {
		// A session opened while the servers were looked at is not in
		// live yet: forgetting it would leave it usable by anyone with
		// its id (ServeHTTP refuses sessions it does not know, but the
		// record is what says whose it is).
		if !live[id] && use.last.Before(start) {
			delete(h.sessions, id)
		}
	}
	h.mu.Unlock()
}

// httpError answers with the API's error shape.
func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
