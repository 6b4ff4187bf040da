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
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		return true // the page and the login route do their own checks
	}
	if s.bearerOK(r) {
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
	if s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1 {
		return true
	}
	return s.sessions.valid(tok)
}

// RandomToken returns 32 random bytes in hex.
func RandomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sessions are browser logins: one-time codes exchanged for a session id
// that the page uses as its bearer token.
type sessions struct {
	now   func() time.Time
	mu    sync.Mutex
	codes map[string]time.Time // code -> expiry
	live  map[string]time.Time // session -> expiry
}

const (
	loginCodeTTL = 2 * time.Minute
	sessionTTL   = 12 * time.Hour
)

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, codes: map[string]time.Time{}, live: map[string]time.Time{}}
}

func (s *sessions) newCode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	code := RandomToken()
	s.codes[code] = s.now().Add(loginCodeTTL)
	return code
}

// redeem turns a one-time code into a session; a code works once.
func (s *sessions) redeem(code string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.codes[code]
	delete(s.codes, code)
	if !ok || s.now().After(exp) {
		return "", false
	}
	id := RandomToken()
	s.live[id] = s.now().Add(sessionTTL)
	return id, true
}

func (s *sessions) valid(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.live[id]
	if !ok {
		return false
	}
	if s.now().After(exp) {
		delete(s.live, id)
		return false
	}
	s.live[id] = s.now().Add(sessionTTL)
	return true
}
