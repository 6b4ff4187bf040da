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
// closes, that reader (waiting for the host) is woken and the host's
// connection closed, so the host's writes fail soon instead of filling
// buffers for a reader that is gone. The same connection to the proxy
// then serves nothing more, and a new one works.
func TestADownloadTheSandboxLeavesEndsUpstreamToo(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	const size = 256 << 20
	ended := make(chan error, 1)
	chunk := make([]byte, 1<<20)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for i := 0; i < size/len(chunk); i++ {
			if _, err := w.Write(chunk); err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	}), "api.test")
	f.rules["d"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port)}}}}
	c := f.sandboxClient(t, "d")
	c.Timeout = time.Minute
	resp, err := c.Get(fmt.Sprintf("https://api.test:%d/big", port))
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
		if err == nil {
			t.Fatal("the host wrote all 256 MiB to a sandbox that had left after 4")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the host could still write 20 s after the sandbox left: the proxy kept its connection")
	}
	if _, body := do(t, c, "GET", fmt.Sprintf("https://api.test:%d/small", port), nil, ""); body != "ok" {
		t.Errorf("the next request: %q", body)
	}
}
