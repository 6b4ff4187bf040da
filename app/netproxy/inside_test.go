package netproxy

import (
	"bufio"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// TestHTTPRulesHoldOnAnotherNameOfTheHost: a GET-only rule for api.test
// holds through a tunnel to the host's address, or to another name of
// it, when the client speaks TLS to api.test inside (the reviewer's way
// around it); a client that gives no server name, to an address of
// api.test, is refused; a tunnel whose client speaks to another name
// stays a tunnel the proxy does not look into; and a plain request with
// Host api.test through a tunnel to the address is judged too.
func TestHTTPRulesHoldOnAnotherNameOfTheHost(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	f := newLookFixture(t, map[string]Rules{}, true)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method+" "+r.URL.Path] = true
		mu.Unlock()
	})
	port := f.upstream.ServeTLS(t, h, "api.test", "tunnel.test")
	f.rules["h"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{
		{Host: fmt.Sprintf("api.test:%d", port), Methods: []string{"GET"}},
	}}}
	addr := f.listen(t, "h")
	ask := func(tc net.Conn, method, path string) *http.Response {
		t.Helper()
		fmt.Fprintf(tc, "%s %s HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", method, path, port)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, via := range []string{"api.test", "127.0.0.1", "tunnel.test"} {
		tc := rawLooked(t, addr, via, port, f.engineRoots(t))
		if resp := ask(tc, "DELETE", "/repo-"+via); resp.StatusCode != 403 || resp.Header.Get("X-Senclaw-Refused") == "" {
			t.Errorf("DELETE through a tunnel to %s:%d (TLS name api.test): %d, want the GET-only rule's 403", via, port, resp.StatusCode)
		}
		tc = rawLooked(t, addr, via, port, f.engineRoots(t))
		if resp := ask(tc, "GET", "/ok-"+via); resp.StatusCode != 200 {
			t.Errorf("GET through a tunnel to %s:%d: %d, want 200", via, port, resp.StatusCode)
		}
	}
	mu.Lock()
	for k := range seen {
		if strings.HasPrefix(k, "DELETE") {
			t.Errorf("the host was sent %s", k)
		}
	}
	mu.Unlock()

	// No server name, to the address api.test resolves to: refused.
	c := connect(t, addr, fmt.Sprintf("127.0.0.1:%d", port))
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Error("a TLS client that names no server, to an address of api.test, was tunnelled")
	}
	named := false
	for _, r := range f.refusals() {
		named = named || strings.Contains(r.Rule, "names no server")
	}
	if !named {
		t.Errorf("the nameless connection is not among the sandbox's refusals: %+v", f.refusals())
	}

	// Another name inside: a tunnel, the host's own certificate seen.
	c = connect(t, addr, fmt.Sprintf("127.0.0.1:%d", port))
	tc = tls.Client(c, &tls.Config{ServerName: "tunnel.test", RootCAs: f.upstream.Pool()})
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Errorf("a tunnel whose client speaks to tunnel.test: %v; want the host's own certificate", err)
	}

	// Plain HTTP with Host api.test through a tunnel to the address.
	plain := httptest.NewServer(h)
	defer plain.Close()
	pport := plain.Listener.Addr().(*net.TCPAddr).Port
	f.rules["h"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{
		{Host: fmt.Sprintf("api.test:%d", pport), Methods: []string{"GET"}},
	}}}
	c = connect(t, addr, fmt.Sprintf("127.0.0.1:%d", pport))
	fmt.Fprintf(c, "DELETE /plain HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", pport)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 403 {
		t.Errorf("a plain DELETE with Host api.test through a tunnel to its address: %v %v, want 403", resp, err)
	}
}

// connect opens a CONNECT tunnel to target through the proxy at addr.
func connect(t *testing.T, addr, target string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %v %v", target, resp, err)
	}
	return withBuffer(c, br)
}

// TestAnEncryptedClientHelloIsRefusedWhereRulesHold: an encrypted
// ClientHello (ECH) shows the proxy only its outer name, a cover; inside
// may be a host the sandbox's rules name. On a port they cover, a tunnel
// whose outer name is not the one it was opened to is refused, and the
// refusal says why; one whose outer name is that host (GREASE, which
// browsers send to every server) is judged by that name, not refused.
func TestAnEncryptedClientHelloIsRefusedWhereRulesHold(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "api.test", "tunnel.test")
	f.rules["e"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port), Methods: []string{"GET"}}}}}
	addr := f.listen(t, "e")
	hello := func(outer string) {
		c := connect(t, addr, fmt.Sprintf("tunnel.test:%d", port))
		tc := tls.Client(c, &tls.Config{ServerName: "api.test", InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, EncryptedClientHelloConfigList: echConfigList(t, outer)})
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		_ = tc.Handshake() // the host has no ECH keys: it fails either way
	}
	said := func() bool {
		for _, r := range f.refusals() {
			if strings.Contains(r.Rule, "encrypted TLS ClientHello") {
				return true
			}
		}
		return false
	}
	hello("tunnel.test")
	if said() {
		t.Errorf("an ECH hello whose outer name is the tunnel's host was refused: %+v", f.refusals())
	}
	hello("cover.test")
	if !said() {
		t.Errorf("an ECH hello with another outer name was not refused: %+v", f.refusals())
	}
}

// echConfigList is an ECHConfigList (RFC 9849) of one X25519 config whose
// public name is publicName.
func echConfigList(t *testing.T, publicName string) []byte {
	t.Helper()
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u16 := func(b []byte, v int) []byte { return append(b, byte(v>>8), byte(v)) }
	var c []byte
	c = append(c, 1)   // config_id
	c = u16(c, 0x0020) // KEM: DHKEM(X25519, HKDF-SHA256)
	pub := key.PublicKey().Bytes()
	c = u16(c, len(pub))
	c = append(c, pub...)
	c = u16(c, 4)      // cipher suites
	c = u16(c, 0x0001) // HKDF-SHA256
	c = u16(c, 0x0001) // AES-128-GCM
	c = append(c, 0)   // maximum_name_length
	c = append(c, byte(len(publicName)))
	c = append(c, publicName...)
	c = u16(c, 0) // extensions
	cfg := u16(u16(nil, 0xfe0d), len(c))
	cfg = append(cfg, c...)
	return append(u16(nil, len(cfg)), cfg...)
}
