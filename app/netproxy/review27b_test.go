package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"crypto/tls"

	"github.com/senclaw/sandbox/backends"
)

// methodsSeen is a host that records the methods it was sent.
func methodsSeen() (http.Handler, func() []string) {
	var mu sync.Mutex
	var seen []string
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.Host+" "+r.URL.Path)
			mu.Unlock()
		}), func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string{}, seen...)
		}
}

// TestReviewAWarningAlertBeforeTheHelloIsLookedInto: a TLS client that
// sends a warning alert record before its ClientHello (a Go server, and
// TLS 1.2 servers generally, drop it) is not taken for a plain tunnel.
func TestReviewAWarningAlertBeforeTheHelloIsLookedInto(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	h, seen := methodsSeen()
	port := f.upstream.ServeTLS(t, h, "api.test", "tunnel.test")
	f.rules["a"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{
		{Host: fmt.Sprintf("api.test:%d", port), Methods: []string{"GET"}},
	}}}
	addr := f.listen(t, "a")
	for _, via := range []string{"127.0.0.1", "tunnel.test"} {
		c := connect(t, addr, fmt.Sprintf("%s:%d", via, port))
		// alert record: level warning (1), no_renegotiation (100)
		c.Write([]byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x01, 100})
		tc := tls.Client(c, &tls.Config{ServerName: "api.test", RootCAs: f.upstream.Pool()})
		if err := tc.Handshake(); err != nil {
			continue // refused: good
		}
		fmt.Fprintf(tc, "DELETE /alert-%s HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", via, port)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err == nil {
			t.Errorf("through a tunnel to %s, after a warning alert, TLS to api.test with its own certificate: DELETE got %d; seen by the host: %v", via, resp.StatusCode, seen())
		}
	}
}

// TestReviewPlainRequestsATunnelCarries: plain HTTP through a tunnel to
// the address of a GET-only host: a method of more than 7 letters, or
// with a hyphen, and a request without Host were tunnelled untouched.
func TestReviewPlainRequestsATunnelCarries(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	h, seen := methodsSeen()
	plain := httptest.NewServer(h)
	defer plain.Close()
	pport := plain.Listener.Addr().(*net.TCPAddr).Port
	f.rules["p"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{
		{Host: fmt.Sprintf("api.test:%d", pport), Methods: []string{"GET"}},
	}}}
	addr := f.listen(t, "p")
	for _, c := range []struct{ name, send string }{
		{"PROPFIND", fmt.Sprintf("PROPFIND /propfind HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", pport)},
		{"M-SEARCH", fmt.Sprintf("M-SEARCH /msearch HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", pport)},
		{"HTTP/1.0 without Host", "DELETE /nohost HTTP/1.0\r\n\r\n"},
	} {
		conn := connect(t, addr, fmt.Sprintf("127.0.0.1:%d", pport))
		io.WriteString(conn, c.send)
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		io.Copy(io.Discard, conn)
	}
	for _, s := range seen() {
		if !strings.HasPrefix(s, "GET ") {
			t.Errorf("the GET-only host was sent %q through a tunnel to its address", s)
		}
	}
}

// TestReviewAPipelinedRequestIsJudged: a plain HTTP tunnel to the address
// of a GET-only host whose first request names another host: the DELETE
// for api.test pipelined after it never reaches the host, since every
// request of the tunnel is served by the proxy and held to the first's
// host.
func TestReviewAPipelinedRequestIsJudged(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	h, seen := methodsSeen()
	plain := httptest.NewServer(h)
	defer plain.Close()
	pport := plain.Listener.Addr().(*net.TCPAddr).Port
	f.rules["p"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{
		{Host: fmt.Sprintf("api.test:%d", pport), Methods: []string{"GET"}},
	}}}
	conn := connect(t, f.listen(t, "p"), fmt.Sprintf("127.0.0.1:%d", pport))
	fmt.Fprintf(conn, "GET /first HTTP/1.1\r\nHost: other.test:%d\r\n\r\nDELETE /second HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", pport, pport)
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	io.Copy(io.Discard, conn)
	for _, s := range seen() {
		if !strings.HasPrefix(s, "GET ") {
			t.Errorf("the GET-only host was sent %q, the second request of a tunnel whose first named other.test", s)
		}
	}
}
