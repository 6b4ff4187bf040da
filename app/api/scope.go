package api

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/secevents"
)

// handle registers fn for pattern behind the table's row for it: the
// principal's scope and tool policy are checked before fn runs. A
// pattern the table does not name is a bug that stops the server from
// being built, never a route anyone may call.
func (s *Server) handle(pattern string, fn http.HandlerFunc) {
	route, ok := principal.Lookup(pattern)
	if !ok {
		panic("api: the route " + pattern + " is not in app/principal/table.json; add its scope there")
	}
	s.guarded = append(s.guarded, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if s.allowed(w, r, route) {
			fn(w, r)
		}
	})
}

// The kinds of security event the API records.
const (
	secKindScopeDenied   = "security.scope_denied"
	secKindToolDenied    = "security.tool_policy_denied"
	secKindCrossTenant   = "security.cross_tenant_denied"
	secKindTokenRejected = "security.token_rejected"
)

// writeErr answers err as writeError does; a refusal by scope or tool
// policy is also a security event.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var de *principal.DeniedError
	if errors.As(err, &de) {
		s.denied(w, r, err)
		return
	}
	var nf *app.NotFoundError
	if errors.As(err, &nf) && nf.CrossTenant {
		s.security(r, Principal(r.Context()), secKindCrossTenant, "asked for "+nf.Kind+" "+strconv.Quote(nf.ID)+", which is another tenant's")
	}
	writeError(w, err)
}

// denied answers a request its principal may not make (a
// *principal.DeniedError): 403 with the scope or the tool named, and a
// security event.
func (s *Server) denied(w http.ResponseWriter, r *http.Request, err error) {
	var de *principal.DeniedError
	if !errors.As(err, &de) {
		writeError(w, err)
		return
	}
	kind := secKindScopeDenied
	if de.Tool != "" {
		kind = secKindToolDenied
	}
	s.security(r, de.Principal, kind, err.Error())
	writeJSON(w, http.StatusForbidden, errorBody{Error: err.Error(), Scope: string(de.Scope), Tool: de.Tool})
}

// security records a security event of r: who, how it came, the
// request's first characters and why it was refused. A token nobody has
// is recorded once a minute per address and connection kind: a page
// whose session ended polls on, and must not push out every other event.
func (s *Server) security(r *http.Request, p principal.Principal, kind, reason string) {
	if kind == secKindTokenRejected && !s.rejected.first(p.Via+" "+hostOf(r.RemoteAddr)+" "+reason, s.opts.Now()) {
		return
	}
	if s.e == nil {
		s.log.Warn("A request was refused.", "kind", kind, "principal", p.Label(), "request", r.Method+" "+r.URL.RequestURI(), "reason", reason)
		return
	}
	via := p.Via
	if via == "" {
		t, _ := r.Context().Value(transportKey{}).(transport)
		via = t.kind
	}
	s.e.Security().Record(secevents.Event{
		Kind: kind, Principal: p.Label(), Tenant: p.Tenant, Source: via,
		Request: r.Method + " " + r.URL.RequestURI(), Reason: reason, Remote: remoteOf(r, via),
	})
}

// hostOf is the host of a remote address (the port changes with each
// connection).
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// onceAMinute remembers what was recorded in the last minute.
type onceAMinute struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// first reports whether key was not seen in the minute before now, and
// notes it.
func (o *onceAMinute) first(key string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil || len(o.seen) > 4096 {
		o.seen = map[string]time.Time{}
	}
	if t, ok := o.seen[key]; ok && now.Sub(t) < time.Minute {
		return false
	}
	o.seen[key] = now
	return true
}

// remoteOf is the client's address of a request that came over the
// network (the LAN listener, TCP); empty for the socket.
func remoteOf(r *http.Request, via string) string {
	if via == "socket" || via == "inproc" {
		return ""
	}
	return r.RemoteAddr
}

// tenantFilter is the ?tenant filter of the owner's lists: a tenant's
// slug, "-" for the owner's own objects, absent (or "*") for every
// tenant's. Anyone else sees its own tenant's whatever it asks: the
// engine's lists apply the principal.
func tenantFilter(r *http.Request) string {
	switch t := r.URL.Query().Get("tenant"); t {
	case "", "*":
		return "*"
	case "-":
		return ""
	default:
		return t
	}
}
