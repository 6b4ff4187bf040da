package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// transport says how a connection reached the server; listeners put it in
// each connection's context.
type transport struct {
	// kind is "socket" (the owner's Unix socket, peer already checked),
	// "tcp" (token or session required, Host and Origin checked) or
	// "inproc" (the desktop window's own asset server).
	kind string
	// hosts are the Host header values a TCP request may carry.
	hosts []string
}

type transportKey struct{}

// WithTransport marks ctx as belonging to a connection of kind. The
// listeners of Serve use it; the desktop shell marks its in-process
// requests "inproc".
func WithTransport(ctx context.Context, kind string, hosts []string) context.Context {
	return context.WithValue(ctx, transportKey{}, transport{kind: kind, hosts: hosts})
}

// allowedHosts are the Host values for a loopback listener on addr.
func allowedHosts(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return nil
	}
	port := strconv.Itoa(tcp.Port)
	return []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port}
}

const sessionCookie = "senclaw_session"

// authorize lets a request through or answers it with 401/403. Over TCP a
// request needs a known Host (no DNS rebinding), an Origin that is this
// server's own if any (no cross-site requests), and for the API a bearer
// token or session. A Space App's own token (daemonApi) reaches only that
// app's runtime and logs: another app's id answers 404, anything else 403.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	t, _ := r.Context().Value(transportKey{}).(transport)
	switch t.kind {
	case "socket", "inproc":
		return true
	case "tcp":
	default:
		writeJSON(w, http.StatusForbidden, errorBody{Error: "connection of unknown origin"})
		return false
	}
	if !slices.Contains(t.hosts, r.Host) {
		writeJSON(w, http.StatusForbidden, errorBody{Error: "Host " + strconv.Quote(r.Host) + " is not this server's address; senclaw answers only 127.0.0.1, localhost and [::1]"})
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !strings.HasPrefix(origin, "http://") || !slices.Contains(t.hosts, strings.TrimPrefix(origin, "http://")) {
			writeJSON(w, http.StatusForbidden, errorBody{Error: "cross-site request from " + strconv.Quote(origin) + " refused"})
			return false
		}
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/mcp" {
		return true // the page and the login route do their own checks
	}
	if s.bearerOK(r) || s.sessions.pageOK(r) {
		return true
	}
	if id, ok := s.appToken(r); ok {
		return s.appScope(w, r, id)
	}
	writeJSON(w, http.StatusUnauthorized, errorBody{Error: "missing or wrong token: send Authorization: Bearer <token> (the token is in the api-token file of senclaw's config dir), or open the dashboard with `senclaw url`"})
	return false
}

// appToken returns the Space App whose own token the request carries.
func (s *Server) appToken(r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || s.apps == nil {
		return "", false
	}
	return s.apps.AppForToken(tok)
}

// appScope lets a Space App's token reach GET .../apps/<its id>/runtime
// and .../logs only.
func (s *Server) appScope(w http.ResponseWriter, r *http.Request, id string) bool {
	rest, under := strings.CutPrefix(r.URL.Path, spacePrefix+"/")
	target, route, _ := strings.Cut(rest, "/")
	if r.Method == http.MethodGet && under && (route == "runtime" || route == "logs") {
		if target == id {
			return true
		}
		writeJSON(w, http.StatusNotFound, errorBody{Error: "no Space App with id " + strconv.Quote(target)})
		return false
	}
	writeJSON(w, http.StatusForbidden, errorBody{Error: "this token is Space App " + strconv.Quote(id) + "'s own: it reaches only GET " + spacePrefix + "/" + id + "/runtime and /logs"})
	return false
}

func (s *Server) bearerOK(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" {
		return false
	}
	return s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1
}

// RandomToken returns 32 random bytes in hex.
func RandomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sessions are browser logins. A one-time code (from the owner's socket)
// is exchanged for a session, kept in an HttpOnly, SameSite=Strict cookie
// that the page's scripts cannot read. The page gets only the session's
// page token, which it sends as its bearer token; the token is worth
// nothing without the cookie, and the cookie nothing without the token,
// which no other site can know (CSRF). A session ends 12 hours after its
// login however much it is used, and after 2 hours without a request.
type sessions struct {
	now   func() time.Time
	mu    sync.Mutex
	codes map[string]time.Time // code -> expiry
	live  map[string]*session  // session id (the cookie) -> session
	// last is the latest time handed out: codes and sessions made in the
	// same instant still get distinct, increasing times, so "the oldest
	// goes first" is well defined.
	last time.Time
}

// stamp is now, or just after the last time handed out.
func (s *sessions) stamp() time.Time {
	t := s.now()
	if !t.After(s.last) {
		t = s.last.Add(time.Nanosecond)
	}
	s.last = t
	return t
}

type session struct {
	page          string // the page's bearer token
	started, seen time.Time
}

const (
	loginCodeTTL = 2 * time.Minute
	// sessionTTL is a session's absolute lifetime, from its login.
	sessionTTL = 12 * time.Hour
	// sessionIdle ends a session nothing used for that long.
	sessionIdle = 2 * time.Hour
	// maxCodes and maxSessions bound what is kept; the oldest go first.
	maxCodes    = 32
	maxSessions = 32
)

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, codes: map[string]time.Time{}, live: map[string]*session{}}
}

func (s *sessions) newCode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	for len(s.codes) >= maxCodes {
		delete(s.codes, oldest(s.codes, func(exp time.Time) time.Time { return exp }))
	}
	code := RandomToken()
	s.codes[code] = s.stamp().Add(loginCodeTTL)
	return code
}

// redeem turns a one-time code into a session and returns its id (the
// cookie's value); a code works once.
func (s *sessions) redeem(code string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	_, ok := s.codes[code]
	delete(s.codes, code)
	if !ok {
		return "", false
	}
	for len(s.live) >= maxSessions {
		delete(s.live, oldest(s.live, func(x *session) time.Time { return x.started }))
	}
	id, now := RandomToken(), s.stamp()
	s.live[id] = &session{page: RandomToken(), started: now, seen: now}
	return id, true
}

// page returns the page token of session id, if it is live, and counts
// the request as a use.
func (s *sessions) page(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	x, ok := s.live[id]
	if !ok {
		return "", false
	}
	x.seen = s.now()
	return x.page, true
}

// pageOK reports whether r carries a live session's cookie and, as its
// bearer token, that session's page token.
func (s *sessions) pageOK(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return false
	}
	page, ok := s.page(c.Value)
	return ok && subtle.ConstantTimeCompare([]byte(tok), []byte(page)) == 1
}

// sweep drops expired codes and sessions. The maps are small (bounded):
// a sweep at every use costs nothing.
func (s *sessions) sweep() {
	now := s.now()
	for code, exp := range s.codes {
		if now.After(exp) {
			delete(s.codes, code)
		}
	}
	for id, x := range s.live {
		if now.After(x.started.Add(sessionTTL)) || now.After(x.seen.Add(sessionIdle)) {
			delete(s.live, id)
		}
	}
}

// oldest returns the key of m whose time is the earliest.
func oldest[V any](m map[string]V, at func(V) time.Time) string {
	var key string
	var first time.Time
	for k, v := range m {
		if t := at(v); key == "" || t.Before(first) {
			key, first = k, t
		}
	}
	return key
}
