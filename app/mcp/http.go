package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/principal"
)

// HTTPOptions configure the MCP Streamable HTTP face that the daemon
// serves at /mcp, next to the REST API and behind its checks.
type HTTPOptions struct {
	// Principal says who sent an authorized request (api.Principal);
	// every session belongs to the principal that opened it.
	Principal func(r *http.Request) principal.Principal
	// ClientFor returns the engine client the sessions of p use: one
	// that acts as p, so that the API decides each tool's requests as
	// p's own.
	ClientFor func(p principal.Principal) *client.Client
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
// holds (at the bound, a new one closes its least recently used idle
// session; 429 when every one is busy), and closes sessions idle for
// longer than the settings say.
type HTTPHandler struct {
	opts HTTPOptions
	sdk  *sdk.StreamableHTTPHandler
	stop chan struct{}
	once sync.Once

	mu       sync.Mutex
	servers  map[string]*sdk.Server // one per principal (by key): its own client
	sessions map[string]*sessionUse // by session id
	// closed are sessions the cap closed, which the SDK may list a while
	// longer: they count no more.
	closed map[string]bool
}

// sessionUse is what the handler knows of one session.
type sessionUse struct {
	principal string
	last      time.Time // the end of its latest request
	inFlight  int       // POSTs going on (a tool call counts as activity)
	streams   int       // GETs going on (a client listening on its stream)
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
	h := &HTTPHandler{opts: opts, stop: make(chan struct{}), servers: map[string]*sdk.Server{}, sessions: map[string]*sessionUse{}, closed: map[string]bool{}}
	h.sdk = sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		p, _ := r.Context().Value(principalCtxKey{}).(principal.Principal)
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

// key is what binds sessions to their principal: the principal and the
// token it came with (a session id alone is not a credential).
func key(p principal.Principal) string { return p.Label() + "|" + p.TokenID }

// server is p's MCP server, made on first use. Its client acts as p,
// whose scopes and tool policy the API reads afresh at every request.
func (h *HTTPHandler) server(p principal.Principal) *sdk.Server {
	k := key(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.servers[k]; ok {
		return s
	}
	s := New(Options{Client: h.opts.ClientFor(p), Version: h.opts.Version, Logger: h.opts.Logger})
	h.servers[k] = s
	return s
}

// liveSessions counts p's open sessions.
func (h *HTTPHandler) liveSessions(p principal.Principal) int {
	n := 0
	for ss := range h.server(p).Sessions() {
		h.mu.Lock()
		if !h.closed[ss.ID()] {
			n++
		}
		h.mu.Unlock()
	}
	return n
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.opts.Principal(r)
	if p.Kind == "" || p.Kind == principal.App {
		httpError(w, http.StatusUnauthorized, "missing or wrong token: send Authorization: Bearer <token> (the token is in the api-token file of senclaw's config dir)")
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), principalCtxKey{}, p))
	sid := r.Header.Get("Mcp-Session-Id")
	if sid != "" {
		h.mu.Lock()
		use, ok := h.sessions[sid]
		if !ok || use.principal != key(p) {
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
		switch r.Method {
		case http.MethodPost:
			use.inFlight++
		case http.MethodGet:
			use.streams++
		}
		h.mu.Unlock()
		defer h.done(sid, r.Method)
		h.sdk.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost {
		_, max := h.opts.Limits()
		// A client that reconnects without closing its sessions (one that
		// restarted, a conformance suite) leaves them idle: at the bound
		// the least recently used idle one makes room.
		if n := h.liveSessions(p); max > 0 && n >= max && !h.closeLeastRecent(p, n-max+1) {
			w.Header().Set("Retry-After", "60")
			httpError(w, http.StatusTooManyRequests, "this token already holds "+strconv.Itoa(n)+" MCP sessions, the most it may (the mcpMaxSessions setting), and every one is busy with a request; close one (DELETE /mcp with its Mcp-Session-Id) or wait for one to end")
			return
		}
	}
	h.sdk.ServeHTTP(&sessionRecorder{ResponseWriter: w, h: h, principal: key(p)}, r)
}

// done ends a request of session sid.
func (h *HTTPHandler) done(sid, method string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if use, ok := h.sessions[sid]; ok {
		switch method {
		case http.MethodPost:
			use.inFlight--
		case http.MethodGet:
			use.streams--
		}
		use.last = h.opts.Now()
	}
}

// closeLeastRecent closes n of principal's idle sessions (no tool call
// or other POST going on), those used least recently first, and those
// with no client listening on their stream before those with one (a
// client that went away has none); false when there are not n such.
func (h *HTTPHandler) closeLeastRecent(p principal.Principal, n int) bool {
	type idleSession struct {
		ss        *sdk.ServerSession
		last      time.Time
		listening bool
	}
	var idle []idleSession
	for ss := range h.server(p).Sessions() {
		h.mu.Lock()
		use, ok := h.sessions[ss.ID()]
		if ok && use.inFlight == 0 {
			idle = append(idle, idleSession{ss, use.last, use.streams > 0})
		}
		h.mu.Unlock()
	}
	if len(idle) < n {
		return false
	}
	sort.Slice(idle, func(i, j int) bool {
		if idle[i].listening != idle[j].listening {
			return !idle[i].listening
		}
		return idle[i].last.Before(idle[j].last)
	})
	for _, s := range idle[:n] {
		h.opts.Logger.Info("Closing the least recently used idle MCP session: its token opens a new one at the mcpMaxSessions bound.", "session", s.ss.ID(), "principal", key(p), "idle", h.opts.Now().Sub(s.last).Round(time.Second))
		h.mu.Lock()
		delete(h.sessions, s.ss.ID())
		h.closed[s.ss.ID()] = true
		h.mu.Unlock()
		s.ss.Close()
	}
	return true
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
	for id := range h.closed {
		if !live[id] {
			delete(h.closed, id)
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
