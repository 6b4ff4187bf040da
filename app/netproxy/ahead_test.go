package netproxy

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// TestADownloadTheSandboxLeavesEndsUpstreamToo: a long answer is read
// ahead by a goroutine of its own; when the sandbox stops reading and
// closes, that reader is stopped and the host's connection closed, so
// the host's writes of an endless answer fail soon instead of going on
// for a reader that is gone. A new connection then works.
func TestADownloadTheSandboxLeavesEndsUpstreamToo(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	const size = 1 << 30
	ended := make(chan error, 1)
	chunk := make([]byte, 1<<20)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			io.WriteString(w, "ok")
			return
		}
		if r.URL.Query().Get("length") != "" {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		for i := 0; ; i++ {
			if r.URL.Query().Get("length") != "" && i == size/len(chunk) {
				ended <- nil
				return
			}
			if _, err := w.Write(chunk); err != nil {
				ended <- err
				return
			}
		}
	}), "api.test")
	f.rules["d"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port)}}}}
	c := f.sandboxClient(t, "d")
	c.Timeout = time.Minute
	for _, q := range []string{"", "?length=1"} { // chunked, then of a known length
		resp, err := c.Get(fmt.Sprintf("https://api.test:%d/big%s", port, q))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, resp.Body, 4<<20); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c.Transport.(*http.Transport).CloseIdleConnections()
		select {
		case err := <-ended:
			if err == nil && q == "" {
				t.Fatal("the endless answer ended")
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the host could still write 20 s after the sandbox left (%q): the proxy kept its connection", q)
		}
	}
	if _, body := do(t, c, "GET", fmt.Sprintf("https://api.test:%d/small", port), nil, ""); body != "ok" {
		t.Errorf("the next request: %q", body)
	}
}
