package api

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/app/tokens"
)

// fuzzServer is an engineless server (every route that passes the scope
// check answers 503, which tells it from a refusal) with an agent token
// and an agent token with a tool policy.
var fuzzServer = sync.OnceValues(func() (*fuzzSetup, error) {
	dir, err := os.MkdirTemp("", "senclaw-fuzz-")
	if err != nil {
		return nil, err
	}
	st, err := store.Open(filepath.Join(dir, "fuzz.db"), store.Options{})
	if err != nil {
		return nil, err
	}
	reg, err := tokens.New(tokens.Options{Docs: st.Tokens()})
	if err != nil {
		return nil, err
	}
	agent, err := reg.Add("fuzz-agent", principal.Agent, "", nil)
	if err != nil {
		return nil, err
	}
	limited, err := reg.Add("fuzz-limited", principal.Agent, "", []string{"sbx_run"})
	if err != nil {
		return nil, err
	}
	s := New(Options{Token: testToken, Tokens: reg})
	s.MountMCP(http.NotFoundHandler())
	return &fuzzSetup{s: s, tokens: []string{"", testToken, agent.Secret, limited.Secret}}, nil
})

type fuzzSetup struct {
	s      *Server
	tokens []string // none (the socket's owner), the owner's, an agent's, a limited agent's
}

// FuzzScopeTable (make test-fuzz) sends any method and path, as the owner, an agent and
// an agent with a tool policy, over the socket: the route the server
// serves it by is in the scope table, and the answer is the table's
// decision (403 naming the scope or tool when the principal may not;
// anything but such a 403 when it may). Nothing panics.
func FuzzScopeTable(f *testing.F) {
	// Every route with its own method, as each principal, and with
	// another method; the fuzzer mutates from there.
	other := map[string]string{"GET": "DELETE", "POST": "PUT", "PUT": "PATCH", "PATCH": "POST", "DELETE": "GET"}
	for i, p := range principal.Patterns() {
		method, path, _ := strings.Cut(p, " ")
		path = strings.ReplaceAll(path, "{id}", "x1")
		for who := range 4 {
			f.Add(method, path, uint8(who))
		}
		f.Add(other[method], path, uint8(i))
	}
	f.Add("GET", "/api/sandbox/sandboxes/a%2Fb/files", uint8(2))
	f.Add("PUT", "/api/sandbox//exec-policy", uint8(2))
	f.Add("PUT", "/api/sandbox/./exec-policy", uint8(3))
	f.Add("GET", "/api/space/apps/", uint8(2))
	f.Fuzz(func(t *testing.T, method, path string, who uint8) {
		fs, err := fuzzServer()
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.ParseRequestURI(path)
		if err != nil || u.Host != "" || u.Scheme != "" {
			return
		}
		req, err := http.NewRequestWithContext(WithTransport(context.Background(), "socket", nil), method, "http://senclaw"+u.RequestURI(), nil)
		if err != nil {
			return
		}
		tok := fs.tokens[int(who)%len(fs.tokens)]
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		p, ok := fs.s.authorize(&recorder{header: http.Header{}}, req)
		if !ok {
			t.Fatalf("a known token was refused: %q", tok)
		}
		_, pattern := fs.s.mux.Handler(req.WithContext(principal.With(req.Context(), p)))
		w := &recorder{header: http.Header{}}
		fs.s.ServeHTTP(w, req)
		if pattern == "" || (w.code >= 300 && w.code < 400) {
			return // no route, or the mux's redirect of an unclean path: nothing was done
		}
		route, ok := principal.Lookup(pattern)
		if !ok {
			t.Fatalf("%s %s is served by %q, which the scope table does not name", method, path, pattern)
		}
		denied := principal.Allow(p, route)
		refused := w.code == http.StatusForbidden && (strings.Contains(w.body.String(), `"scope":`) || strings.Contains(w.body.String(), `"tool":`))
		switch {
		case denied != nil && !refused:
			t.Fatalf("%s %s as %s: %d %s, want 403: %v", method, path, p, w.code, w.body.String(), denied)
		case denied == nil && refused:
			t.Fatalf("%s %s as %s: refused %s, but the table allows it", method, path, p, w.body.String())
		}
	})
}
