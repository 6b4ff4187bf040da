package netproxy

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// TestReviewAStalledHostIsLeftWhenTheSandboxLeaves: a host that sends
// part of a long answer and then nothing: when the sandbox leaves, the
// proxy's connection to the host (and the goroutines and buffers of the
// answer) end, rather than wait for the host as long as it likes.
// (Open; so before bfb2500 too.)
func TestReviewAStalledHostIsLeftWhenTheSandboxLeaves(t *testing.T) {
	openFinding(t)
	f := newLookFixture(t, map[string]Rules{}, true)
	left := make(chan bool, 1)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		io.WriteString(w, strings.Repeat("x", 200<<10))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			left <- true
		case <-time.After(15 * time.Second):
			left <- false
		}
	}), "api.test")
	f.rules["s"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port)}}}}
	c := f.sandboxClient(t, "s")
	resp, err := c.Get(fmt.Sprintf("https://api.test:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	io.CopyN(io.Discard, resp.Body, 100<<10)
	resp.Body.Close()
	c.Transport.(*http.Transport).CloseIdleConnections()
	if !<-left {
		t.Error("15 s after the sandbox left a stalled answer, the proxy still held the host's connection")
	}
}
