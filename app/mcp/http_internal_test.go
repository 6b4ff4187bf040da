package mcp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/principal"
)

// TestASessionNobodyOwnsIsNobodys: the handler knows whose each session
// is; a session id it has no record of (the sweep forgot it while the
// session was being opened) is refused to everyone rather than served to
// whoever sends it, and the sweep never forgets a session opened while
// it looked.
func TestASessionNobodyOwnsIsNobodys(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(HTTPOptions{
		Principal: func(r *http.Request) principal.Principal {
			return principal.Principal{Kind: principal.Agent, Name: r.Header.Get("X-Principal"), TokenID: r.Header.Get("X-Principal")}
		},
		ClientFor: func(principal.Principal) *client.Client { return client.InProcess(http.NotFoundHandler(), "", nil) },
		Limits:    func() (time.Duration, int) { return time.Hour, 8 },
		Version:   "test", SweepEvery: time.Hour,
	})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(principal, sid, body string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Principal", principal)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(data)
	}
	_, sid, _ := post("token:a", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"v0"}}}`)
	if sid == "" {
		t.Fatal("no session opened")
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if code, _, body := post("token:a", sid, ping); code != http.StatusOK {
		t.Fatalf("the opener's ping: %d %s", code, body)
	}
	// The sweep keeps a session recorded after it started looking...
	h.mu.Lock()
	h.sessions[sid].last = time.Now().Add(time.Minute)
	h.sessions["gone"] = &sessionUse{principal: key(principal.Principal{Kind: principal.Agent, Name: "token:a", TokenID: "token:a"}), last: time.Now().Add(-time.Hour)}
	h.mu.Unlock()
	h.closeIdle()
	h.mu.Lock()
	_, kept := h.sessions[sid]
	_, ghost := h.sessions["gone"]
	h.mu.Unlock()
	if !kept || ghost {
		t.Fatalf("after a sweep: the live session kept %v, an ended one kept %v", kept, ghost)
	}
	// ...and a session it has no record of is nobody's.
	h.mu.Lock()
	delete(h.sessions, sid)
	h.mu.Unlock()
	if code, _, body := post("token:b", sid, ping); code != http.StatusNotFound || strings.Contains(body, `"id":2`) {
		t.Fatalf("another principal with the id of a session the handler forgot: %d %s, want 404", code, body)
	}
}
