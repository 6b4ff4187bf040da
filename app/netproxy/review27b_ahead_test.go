package netproxy

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// TestReviewUndeclaredTrailersOfALongAnswer: a chunked answer (read
// ahead) whose host sends trailers it did not announce: run with -race,
// and the value stays masked in what the sandbox gets.
func TestReviewUndeclaredTrailersOfALongAnswer(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set(http.TrailerPrefix+"X-Echo", r.Header.Get("Authorization"))
	}), "api.test")
	f.rules["tr"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization"}}}
	c := f.sandboxClient(t, "tr")
	for i := 0; i < 20; i++ {
		resp, body := do(t, c, "GET", fmt.Sprintf("https://api.test:%d/", port), map[string]string{"Authorization": "Bearer " + ph}, "")
		if resp.StatusCode != 200 || body != "body" || strings.Contains(fmt.Sprint(resp.Trailer), "REAL-VALUE") {
			t.Fatalf("%d %q, trailers %v", resp.StatusCode, body, resp.Trailer)
		}
	}
}

// TestReviewAValueAcrossTheAheadChunks: the value split across the
// 64 KiB chunks the answer is read ahead in is still masked, with
// Content-Length and chunked.
func TestReviewAValueAcrossTheAheadChunks(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("Authorization")
		at, _ := strconv.Atoi(r.URL.Query().Get("at"))
		body := strings.Repeat("a", at) + v + strings.Repeat("b", 200<<10)
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		io.WriteString(w, body[:at+3])
		w.(http.Flusher).Flush()
		io.WriteString(w, body[at+3:])
	}), "api.test")
	f.rules["m"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization", Format: "{}"}}}
	c := f.sandboxClient(t, "m")
	for _, chunked := range []string{"", "1"} {
		for _, at := range []int{64<<10 - 5, 64<<10 - 13, 64<<10 - 1, 128<<10 - 7} {
			resp, body := do(t, c, "GET", fmt.Sprintf("https://api.test:%d/?at=%d&chunked=%s", port, at, chunked), map[string]string{"Authorization": ph}, "")
			if resp.StatusCode != 200 || strings.Contains(body, "REAL-VALUE") || len(body) != at+len("REAL-VALUE-gh")+200<<10 {
				t.Errorf("at %d chunked %q: %d, %d bytes, value unmasked: %v", at, chunked, resp.StatusCode, len(body), strings.Contains(body, "REAL-VALUE"))
			}
		}
	}
}

// TestReviewAHeadAnswerKeepsTheHostsConnection: a HEAD answer with a
// long Content-Length has no body; the proxy's connection to the host
// serves the next request.
func TestReviewAHeadAnswerKeepsTheHostsConnection(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	var mu sync.Mutex
	var remotes []string
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes = append(remotes, r.Method+" "+r.RemoteAddr)
		mu.Unlock()
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		if r.Method != "HEAD" {
			io.WriteString(w, strings.Repeat("x", 1<<20))
		}
	}), "api.test")
	f.rules["h"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port)}}}}
	c := f.sandboxClient(t, "h")
	for _, m := range []string{"HEAD", "HEAD", "GET", "HEAD", "GET"} {
		resp, body := do(t, c, m, fmt.Sprintf("https://api.test:%d/", port), nil, "")
		if resp.StatusCode != 200 || m == "GET" && len(body) != 1<<20 {
			t.Fatalf("%s: %d, %d bytes", m, resp.StatusCode, len(body))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	conns := map[string]bool{}
	for _, r := range remotes {
		conns[r[strings.IndexByte(r, ' ')+1:]] = true
	}
	if len(conns) != 1 {
		t.Errorf("5 requests on one connection of the sandbox took %d connections to the host: %v", len(conns), remotes)
	}
}
