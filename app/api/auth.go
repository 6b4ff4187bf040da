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

	"github.com/senclaw/sandbox/app/principal"
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

// authorize decides who sent r, or answers it with 401/403. Over the
// owner's socket (peer already checked) a request without a token is the
// owner's; one with a token is that token's principal, and a token the
// engine does not know is refused, never taken for the owner. Over TCP a
// request needs a known Host (no DNS rebinding), an Origin that is this
// server's own if any (no cross-site requests), and for the API a bearer
// token or session. A Space App's own token (daemonApi) is an app
// principal: the table lets it reach its own runtime and logs alone.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (principal.Principal, bool) {
	t, _ := r.Context().Value(transportKey{}).(transport)
	switch t.kind {
	case "inproc":
		if p, ok := principal.From(r.Context()); ok {
			// The MCP face acts for the principal that sent it the
			// request; a token's principal is read again, so that a
			// token removed or changed since then is seen as it is now.
			if p.Kind == principal.Agent || p.Kind == principal.Tenant {
				live, ok := s.tokenByID(p.TokenID)
				if !ok {
					s.tokenRejected(w, r, "inproc")
					return principal.Principal{}, false
				}
				live.Via = p.Via
				return live, true
			}
			return p, true
		}
		return principal.Principal{Kind: principal.Owner, Via: "inproc"}, true
	case "socket":
		tok := bearer(r)
		if tok == "" && r.Header.Get("Authorization") == "" {
			return principal.Principal{Kind: principal.Owner, Via: "socket"}, true
		}
		if p, ok := s.byToken(r, tok, "socket"); ok {
			return p, true
		}
		s.tokenRejected(w, r, "socket")
		return principal.Principal{}, false
	case "tcp":
	case "lan":
		return s.authorizeLAN(w, r)
	default:
		writeJSON(w, http.StatusForbidden, errorBody{Error: "connection of unknown origin"})
		return principal.Principal{}, false
	}
	if !slices.Contains(t.hosts, r.Host) {
		writeJSON(w, http.StatusForbidden, errorBody{Error: "Host " + strconv.Quote(r.Host) + " is not this server's address; senclaw answers only 127.0.0.1, localhost and [::1]"})
		return principal.Principal{}, false
	}
	// A login page is a file:// page, whose form posts with Origin "null":
	// accepted for that route alone, where only a live one-time code,
	// which no other site can know, does anything.
	loginForm := r.Method == http.MethodPost && r.URL.Path == "/login" && r.Header.Get("Origin") == "null"
	if origin := r.Header.Get("Origin"); origin != "" && !loginForm {
		if !strings.HasPrefix(origin, "http://") || !slices.Contains(t.hosts, strings.TrimPrefix(origin, "http://")) {
			writeJSON(w, http.StatusForbidden, errorBody{Error: "cross-site request from " + strconv.Quote(origin) + " refused"})
			return principal.Principal{}, false
		}
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/mcp" {
		return principal.Principal{Via: "tcp"}, true // the page and the login route do their own checks
	}
	if s.sessions.pageOK(r) {
		return principal.Principal{Kind: principal.Owner, TokenID: "session:" + shortID(bearer(r)), Via: "tcp"}, true
	}
	if tok := bearer(r); tok != "" {
		if p, ok := s.byToken(r, tok, "tcp"); ok {
			return p, true
		}
	}
	s.tokenRejected(w, r, "tcp")
	return principal.Principal{}, false
}

// byToken is the principal whose token tok is: the owner's API token, a
// Space App's own token, or an agent or tenant token of the engine's.
func (s *Server) byToken(r *http.Request, tok, via string) (principal.Principal, bool) {
	if tok == "" {
		return principal.Principal{}, false
	}
	if s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1 {
		return principal.Principal{Kind: principal.Owner, TokenID: "owner-token", Via: via}, true
	}
	if id, ok := s.appToken(tok); ok {
		tenant, _ := s.apps.TenantOf(id)
		return principal.Principal{Kind: principal.App, Name: id, TokenID: "app:" + id, Tenant: tenant, Via: via}, true
	}
	if s.opts.Tokens != nil {
		if p, ok := s.opts.Tokens.Verify(tok); ok {
			p.Via = via
			return p, true
		}
	}
	return principal.Principal{}, false
}

// tokenByID is the principal of the agent or tenant token id now.
func (s *Server) tokenByID(id string) (principal.Principal, bool) {
	if s.opts.Tokens == nil || id == "" {
		return principal.Principal{}, false
	}
	return s.opts.Tokens.ByID(id)
}

// tokenRejected answers a request whose token no principal has: 401.
func (s *Server) tokenRejected(w http.ResponseWriter, r *http.Request, via string) {
	reason := "no token"
	if r.Header.Get("Authorization") != "" {
		reason = "a token the engine does not know"
	}
	s.security(r, principal.Principal{Via: via}, secKindTokenRejected, reason)
	msg := "missing or wrong token: send Authorization: Bearer <token> (the token is in the api-token file of senclaw's config dir, or one `senclaw tokens add` made), or open the dashboard with `senclaw open`"
	if via == "socket" {
		msg = "the token this request sends is not one the engine knows (rotated or removed?): send none to act as the owner of this socket, or a token `senclaw tokens add` made"
	}
	writeJSON(w, http.StatusUnauthorized, errorBody{Error: msg})
}

// appToken returns the Space App whose own token tok is.
func (s *Server) appToken(tok string) (string, bool) {
	if s.apps == nil {
		return "", false
	}
	return s.apps.AppForToken(tok)
}

// allowed decides r by the table's row for its route before anything
// happens: 403 naming the scope or the tool policy (and a security
// event), 404 for an app's token on another app's routes (an id that is
// not its own is not confirmed).
func (s *Server) allowed(w http.ResponseWriter, r *http.Request, route principal.Route) bool {
	p := Principal(r.Context())
	if p.Kind == principal.App && route.App {
		if id := r.PathValue("id"); id != p.Name {
			s.security(r, p, secKindCrossTenant, "a Space App's token asked for another app's route")
			writeJSON(w, http.StatusNotFound, errorBody{Error: "no Space App with id " + strconv.Quote(id)})
			return false
		}
		return true
	}
	err := principal.Allow(p, route)
	if err == nil {
		return true
	}
	s.denied(w, r, err)
	return false
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
	// loginCodeTTL is how long a one-time login code is worth anything.
	loginCodeTTL = 60 * time.Second
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
