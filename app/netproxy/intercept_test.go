package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/proxyca"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// lookFixture is a proxy that looks into connections, its CA, and the
// refusals it reported.
type lookFixture struct {
	p        *Proxy
	ca       *proxyca.Authority
	upstream *testutil.TestCA
	rules    map[string]Rules
	mu       sync.Mutex
	refused  []Refusal
}

func newLookFixture(t testing.TB, rules map[string]Rules, pinned bool) *lookFixture {
	t.Helper()
	f := &lookFixture{ca: proxyca.New(t.TempDir(), nil), upstream: testutil.NewTestCA(t), rules: rules}
	names := map[string]bool{"api.test": true, "other.test": true, "plain.test": true, "tunnel.test": true}
	f.p = New(Options{
		Rules: func(id string) (Rules, bool) { r, ok := f.rules[id]; return r, ok },
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if names[host] {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		},
		TreatAsRemote: func(netip.AddrPort) bool { return true },
		CA:            f.ca,
		UpstreamRoots: func(string, int) *x509.CertPool {
			if pinned {
				return f.upstream.Pool()
			}
			return nil
		},
		SecretValue: func(name string) ([]byte, error) {
			if name == "gh" {
				return []byte("REAL-VALUE-gh"), nil
			}
			return nil, errors.New("no such secret")
		},
		OnRefused: func(_ string, r Refusal) { f.mu.Lock(); f.refused = append(f.refused, r); f.mu.Unlock() },
	})
	t.Cleanup(f.p.Close)
	return f
}

// listen serves sandbox id on a fresh loopback listener.
func (f *lookFixture) listen(t testing.TB, id string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go f.p.Serve(l, id)
	return l.Addr().String()
}

// client goes through the proxy at addr and trusts roots.
func client(addr string, roots *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           func(*http.Request) (*neturl.URL, error) { return parseURL("http://" + addr) },
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

func (f *lookFixture) sandboxClient(t *testing.T, id string) *http.Client {
	t.Helper()
	pemCA, err := f.ca.CertPEM()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemCA)
	return client(f.listen(t, id), roots)
}

func (f *lookFixture) refusals() []Refusal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Refusal{}, f.refused...)
}

func do(t *testing.T, c *http.Client, method, url string, header map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body == "" {
		req.Body = nil
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// echo answers with what it was sent, except the Authorization header,
// which it only compares: the sandbox must never get the value back.
func echo(seen *sync.Map) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.Store(r.Method+" "+r.URL.RequestURI(), r.Header.Get("Authorization"))
		fmt.Fprintf(w, "%s %s body=%d auth=%v", r.Method, r.URL.RequestURI(), len(b), r.Header.Get("Authorization") != "")
	})
}

const token = "0123456789abcdef0123456789abcdef"

var ph = Placeholder("gh", token)

// TestSecretsAreSwappedOnlyOnTheWayToTheirHosts: the placeholder in the
// secret's header becomes the value on a request to its host (format,
// Basic credential); sent to another host (plain HTTP, a looked-into
// HTTPS host, in a header or in a body), in another header, or over plain
// HTTP to its own host, it is refused, counted and reported.
func TestSecretsAreSwappedOnlyOnTheWayToTheirHosts(t *testing.T) {
	var seen sync.Map
	f := newLookFixture(t, map[string]Rules{}, true)
	apiPort := f.upstream.ServeTLS(t, echo(&seen), "api.test")
	otherPort := f.upstream.ServeTLS(t, echo(&seen), "other.test")
	plain := httptest.NewServer(echo(&seen))
	t.Cleanup(plain.Close)
	plainPort := plain.Listener.Addr().(*net.TCPAddr).Port
	f.rules["s"] = Rules{Network: true,
		Ports:   backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("other.test:%d", otherPort)}}},
		Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", apiPort)}, Header: "Authorization", Format: "Bearer {}"}}}
	c := f.sandboxClient(t, "s")
	api := fmt.Sprintf("https://api.test:%d", apiPort)

	resp, body := do(t, c, "GET", api+"/user", map[string]string{"Authorization": "token " + ph}, "")
	if v, _ := seen.Load("GET /user"); resp.StatusCode != 200 || v != "Bearer REAL-VALUE-gh" {
		t.Fatalf("to its host: %d %q, the server saw %q", resp.StatusCode, body, v)
	}
	if strings.Contains(body, "REAL-VALUE") {
		t.Fatal("the answer carried the value back")
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ph))
	f.rules["s"].Secrets[0].Format = ""
	do(t, c, "GET", api+"/basic", map[string]string{"Authorization": basic}, "")
	if v, _ := seen.Load("GET /basic"); v != "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:REAL-VALUE-gh")) {
		t.Fatalf("a Basic credential: the server saw %q", v)
	}

	refused := []struct {
		name, method, url string
		header            map[string]string
		body, rule        string
	}{
		{"other_host_plain_http", "GET", fmt.Sprintf("http://plain.test:%d/x", plainPort), map[string]string{"Authorization": ph}, "", "not one of its hosts"},
		{"other_host_https_header", "GET", fmt.Sprintf("https://other.test:%d/x", otherPort), map[string]string{"X-Token": strings.ToUpper(token)}, "", "exfiltration attempt"},
		{"other_host_https_body", "POST", fmt.Sprintf("https://other.test:%d/x", otherPort), nil, strings.Repeat("a", 40000) + ph + strings.Repeat("b", 100), "request body carried"},
		{"other_host_plain_body", "POST", fmt.Sprintf("http://plain.test:%d/x", plainPort), nil, "data=" + neturl.QueryEscape(ph), "request body carried"},
		// Past the prescan the body is checked as it streams: cut off
		// at the placeholder, after the host has had its start.
		{"other_host_https_long_body", "POST", fmt.Sprintf("https://other.test:%d/long", otherPort), nil, strings.Repeat("a", prescanBytes+1000) + ph, "request body carried"},
		{"other_host_plain_long_body", "POST", fmt.Sprintf("http://plain.test:%d/long", plainPort), nil, strings.Repeat("a", prescanBytes+1000) + ph, "request body carried"},
		{"other_header", "GET", api + "/y", map[string]string{"X-Api-Key": ph}, "", "header Authorization"},
		{"query", "GET", api + "/q?t=" + neturl.QueryEscape(ph), nil, "", "header Authorization"},
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			before := len(f.refusals())
			n0, _ := f.p.Denials("s")
			resp, body := do(t, c, r.method, r.url, r.header, r.body)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("X-Senclaw-Refused"), r.rule) || !strings.Contains(body, "gh") {
				t.Fatalf("%d %q (X-Senclaw-Refused %q), want 403 naming %q", resp.StatusCode, body, resp.Header.Get("X-Senclaw-Refused"), r.rule)
			}
			if n, _ := f.p.Denials("s"); n != n0+1 {
				t.Fatalf("denials %d -> %d, want one more", n0, n)
			}
			got := f.refusals()
			if len(got) != before+1 || got[len(got)-1].Kind != KindSecret {
				t.Fatalf("refusals %+v", got)
			}
		})
	}
	seen.Range(func(k, v any) bool {
		if strings.Contains(k.(string), "/x") || strings.Contains(k.(string), "/y") || strings.Contains(k.(string), "/q") {
			t.Errorf("a refused request reached a server: %v", k)
		}
		return true
	})
}

// TestHTTPRulesRefuseWithTheRuleNamed: GET-only on /repos/ lets a GET
// there through and refuses a POST and another path with 403, naming the
// rule and how to allow it, over HTTPS (looked into) and plain HTTP.
func TestHTTPRulesRefuseWithTheRuleNamed(t *testing.T) {
	var seen sync.Map
	f := newLookFixture(t, map[string]Rules{}, true)
	apiPort := f.upstream.ServeTLS(t, echo(&seen), "api.test")
	plain := httptest.NewServer(echo(&seen))
	t.Cleanup(plain.Close)
	plainPort := plain.Listener.Addr().(*net.TCPAddr).Port
	f.rules["r"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{
		{Host: fmt.Sprintf("api.test:%d", apiPort), Methods: []string{"GET"}, Paths: []string{"/repos/", "/users/*/keys"}},
		{Host: fmt.Sprintf("plain.test:%d", plainPort), Methods: []string{"GET"}},
	}}}
	c := f.sandboxClient(t, "r")
	api := fmt.Sprintf("https://api.test:%d", apiPort)
	for _, ok := range []string{api + "/repos/a/b", api + "/users/me/keys", fmt.Sprintf("http://plain.test:%d/any", plainPort)} {
		if resp, body := do(t, c, "GET", ok, nil, ""); resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", ok, resp.StatusCode, body)
		}
	}
	for _, c2 := range []struct{ method, url, want string }{
		{"POST", api + "/repos/a/b", "add POST to the methods"},
		{"GET", api + "/admin", "add /admin"},
		{"GET", api + "/users/me/keys/1", "add /users/me/keys/1"},
		{"GET", api + "/repos/%2e%2e/admin", ". or .. segment"},
		{"DELETE", fmt.Sprintf("http://plain.test:%d/any", plainPort), "add DELETE"},
	} {
		resp, body := do(t, c, c2.method, c2.url, nil, "")
		h := resp.Header.Get("X-Senclaw-Refused")
		if resp.StatusCode != 403 || !strings.Contains(h, c2.want) || !strings.Contains(h, "allowHttp") && !strings.Contains(h, "segment") || !strings.Contains(body, c2.want) {
			t.Errorf("%s %s: %d %q, header %q; want 403 saying %q", c2.method, c2.url, resp.StatusCode, body, h, c2.want)
		}
	}
	for _, r := range f.refusals() {
		if r.Kind != KindHTTP || r.Method == "" || r.Host == "" || r.Rule == "" || r.Allow == "" {
			t.Errorf("refusal %+v: want kind http with method, host, path, rule and how to allow it", r)
		}
	}
}

// TestOtherHostsAreTunnelledUntouched: a host no rule and no secret names
// is a plain tunnel: the client sees the host's own certificate (it
// verifies with the upstream's CA, not with the engine's).
func TestOtherHostsAreTunnelledUntouched(t *testing.T) {
	var seen sync.Map
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, echo(&seen), "tunnel.test")
	f.rules["t"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{"api.test"}}}}
	url := fmt.Sprintf("https://tunnel.test:%d/x", port)
	addr := f.listen(t, "t")
	if resp, _ := do(t, client(addr, f.upstream.Pool()), "GET", url, nil, ""); resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].Issuer.CommonName != "test upstream CA" {
		t.Fatalf("tunnel: %d, issuer %v", resp.StatusCode, resp.TLS.PeerCertificates[0].Issuer)
	}
	pemCA, _ := f.ca.CertPEM()
	engine := x509.NewCertPool()
	engine.AppendCertsFromPEM(pemCA)
	if _, err := client(addr, engine).Get(url); err == nil {
		t.Fatal("a tunnelled host's certificate verified with the engine's CA: the proxy looked into it")
	}
}

// TestTheUpstreamIsAlwaysVerified: without the pinned CA the local
// server's certificate does not verify with this machine's roots, and the
// request is answered 502 saying so, never sent.
func TestTheUpstreamIsAlwaysVerified(t *testing.T) {
	var seen sync.Map
	f := newLookFixture(t, map[string]Rules{}, false)
	port := f.upstream.ServeTLS(t, echo(&seen), "api.test")
	f.rules["v"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: "api.test:" + fmt.Sprint(port)}}}}
	resp, body := do(t, f.sandboxClient(t, "v"), "GET", fmt.Sprintf("https://api.test:%d/x", port), nil, "")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "did not verify") {
		t.Fatalf("%d %q, want 502 saying the certificate did not verify", resp.StatusCode, body)
	}
	if _, ok := seen.Load("GET /x"); ok {
		t.Fatal("the request reached a host whose certificate did not verify")
	}
}

func TestMatchGlob(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		glob, path string
		ok         bool
	}{
		{"/repos/*/pulls", "/repos/a/pulls", true},
		{"/repos/*/pulls", "/repos/a/b/pulls", false},
		{"/repos/**", "/repos/a/b/c", true},
		{"/repos/**/pulls", "/repos/a/b/pulls", true},
		{"/v?/x", "/v1/x", true},
		{"/v?/x", "/v//x", false},
		{"/a*", "/abc", true},
		{"/a*", "/a/b", false},
		{"*", "", true},
	} {
		if matchGlob(c.glob, c.path) != c.ok {
			t.Errorf("matchGlob(%q, %q) != %v", c.glob, c.path, c.ok)
		}
	}
	long := "/" + strings.Repeat("a/", 2000)
	start := time.Now()
	matchGlob("/**a**a**a**a**a**b", long)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("a glob of many ** took %v over a long path", d)
	}
}

func TestNormalizeHTTPRules(t *testing.T) {
	t.Parallel()
	got, err := NormalizeHTTPRules([]backends.HTTPRule{{Host: "API.GitHub.com", Methods: []string{"post", "get", "GET"}, Paths: []string{"/repos/"}}})
	if err != nil || got[0].Host != "api.github.com" || strings.Join(got[0].Methods, ",") != "GET,POST" {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []struct {
		rule  backends.HTTPRule
		field string
	}{
		{backends.HTTPRule{Host: "https://x.test/"}, "allowHttp[0].host"},
		{backends.HTTPRule{Host: "x.test", Methods: []string{"GE T"}}, "allowHttp[0].methods[0]"},
		{backends.HTTPRule{Host: "x.test", Paths: []string{"repos"}}, "allowHttp[0].paths[0]"},
		{backends.HTTPRule{Host: "x.test", Paths: []string{"/a/../b"}}, "allowHttp[0].paths[0]"},
		{backends.HTTPRule{Host: "x.test", Paths: []string{"/[ab]"}}, "allowHttp[0].paths[0]"},
	} {
		_, err := NormalizeHTTPRules([]backends.HTTPRule{bad.rule})
		var he *HTTPRuleError
		if !errors.As(err, &he) || he.Field != bad.field {
			t.Errorf("%+v: %v, want an error on %s", bad.rule, err, bad.field)
		}
	}
}

// TestScanReaderFindsATokenSplitAcrossReads: the token is found whatever
// the read sizes, and nothing before it is passed on past what was
// checked.
func TestScanReaderFindsATokenSplitAcrossReads(t *testing.T) {
	t.Parallel()
	data := strings.Repeat("x", 70000) + strings.ToUpper(token) + "tail"
	for _, chunk := range []int{1, 7, 31, 4096, 100000} {
		r := newScanReader(&chunked{s: data, n: chunk}, []bodyToken{{name: "gh", token: []byte(token)}})
		b, err := io.ReadAll(r)
		var sb *secretInBody
		if !errors.As(err, &sb) || strings.Contains(string(b), strings.ToUpper(token)[:8]) && len(b) > 70000 {
			t.Fatalf("chunk %d: read %d bytes, err %v", chunk, len(b), err)
		}
	}
	clean := strings.Repeat("y", 50000)
	b, err := io.ReadAll(newScanReader(&chunked{s: clean, n: 333}, []bodyToken{{name: "gh", token: []byte(token)}}))
	if err != nil || string(b) != clean {
		t.Fatalf("a clean body: %d bytes, %v", len(b), err)
	}
}

type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := min(c.n, len(p), len(c.s))
	copy(p, c.s[:n])
	c.s = c.s[n:]
	return n, nil
}

// TestLookedIntoAnswersOfEveryShapePassWhole: through a connection the
// proxy looks into, a large download, a chunked answer, HEAD, 304, a POST
// that waits for 100 Continue, and an upgrade to another protocol (as a
// WebSocket does) all pass whole, on kept-alive connections.
func TestLookedIntoAnswersOfEveryShapePassWhole(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 1<<17) // 2 MiB
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		io.WriteString(w, big)
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 5; i++ {
			fmt.Fprintf(w, "part%d;", i)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/cached", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %d", r.Method, len(b))
	})
	mux.HandleFunc("/upgrade", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "no upgrade", 400)
			return
		}
		c, brw, _ := w.(http.Hijacker).Hijack()
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		brw.WriteString("echo: " + line)
		brw.Flush()
	})
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, mux, "api.test")
	f.rules["e"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port)}}}}
	c := f.sandboxClient(t, "e")
	c.Transport.(*http.Transport).ExpectContinueTimeout = 5 * time.Second
	base := fmt.Sprintf("https://api.test:%d", port)
	for i := 0; i < 2; i++ { // the second round on kept connections
		if resp, body := do(t, c, "GET", base+"/big", nil, ""); resp.StatusCode != 200 || body != big {
			t.Fatalf("big: %d, %d bytes", resp.StatusCode, len(body))
		}
		if resp, body := do(t, c, "GET", base+"/chunked", nil, ""); resp.StatusCode != 200 || body != "part0;part1;part2;part3;part4;" {
			t.Fatalf("chunked: %d %q", resp.StatusCode, body)
		}
		if resp, body := do(t, c, "HEAD", base+"/big", nil, ""); resp.StatusCode != 200 || body != "" || resp.ContentLength != int64(len(big)) {
			t.Fatalf("HEAD: %d %q %d", resp.StatusCode, body, resp.ContentLength)
		}
		if resp, _ := do(t, c, "GET", base+"/cached", nil, ""); resp.StatusCode != 304 {
			t.Fatalf("304: %d", resp.StatusCode)
		}
		if resp, body := do(t, c, "POST", base+"/echo", map[string]string{"Expect": "100-continue"}, strings.Repeat("x", 100000)); resp.StatusCode != 200 || body != "POST 100000" {
			t.Fatalf("POST with 100-continue: %d %q", resp.StatusCode, body)
		}
	}
	// An upgrade: the raw bytes after the 101 are relayed both ways.
	pemCA, _ := f.ca.CertPEM()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemCA)
	pc, err := net.Dial("tcp", f.listen(t, "e"))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	fmt.Fprintf(pc, "CONNECT api.test:%d HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", port, port)
	br := bufio.NewReader(pc)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(pc, &tls.Config{RootCAs: roots, ServerName: "api.test"})
	fmt.Fprintf(tc, "GET /upgrade HTTP/1.1\r\nHost: api.test:%d\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", port)
	tbr := bufio.NewReader(tc)
	resp, err := http.ReadResponse(tbr, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(tc, "hello\n")
	if line, _ := tbr.ReadString('\n'); line != "echo: hello\n" {
		t.Fatalf("after the upgrade: %q", line)
	}
}

// TestAnAnswerQuotingTheValueIsMasked: a host that echoes the request
// (its headers in a header and in a long body) sends the value back; the
// sandbox gets it masked, the body's length kept, and the request asked
// for no compression.
func TestAnAnswerQuotingTheValueIsMasked(t *testing.T) {
	t.Parallel()
	var encodings sync.Map
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encodings.Store(r.Header.Get("Accept-Encoding"), true)
		auth := r.Header.Get("Authorization")
		w.Header().Set("X-Echo", auth)
		body := strings.Repeat("x", 100000) + auth + strings.Repeat("y", 70000) + auth
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		io.WriteString(w, body)
	}), "api.test")
	f.rules["m"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization"}}}
	c := f.sandboxClient(t, "m")
	c.Transport.(*http.Transport).DisableCompression = false
	resp, body := do(t, c, "GET", fmt.Sprintf("https://api.test:%d/echo", port), map[string]string{"Authorization": "Bearer " + ph}, "")
	stars := strings.Repeat("*", len("REAL-VALUE-gh"))
	if resp.StatusCode != 200 || strings.Contains(body+resp.Header.Get("X-Echo"), "REAL-VALUE") || resp.Header.Get("X-Echo") != "Bearer "+stars ||
		len(body) != 170000+2*len("Bearer REAL-VALUE-gh") || strings.Count(body, stars) != 2 {
		t.Fatalf("%d, X-Echo %q, body of %d bytes with %d masks", resp.StatusCode, resp.Header.Get("X-Echo"), len(body), strings.Count(body, stars))
	}
	encodings.Range(func(k, _ any) bool {
		if k != "" {
			t.Errorf("a request that carried a value asked for compression: %q", k)
		}
		return true
	})
}

// TestAStreamedAnswerIsNotHeldBack: a host that sends an answer in parts
// (a stream of events, chunked or of a known length) and waits between
// them: each part reaches the sandbox before the host sends the next,
// not when the proxy's buffer is full or the answer ends.
func TestAStreamedAnswerIsNotHeldBack(t *testing.T) {
	t.Parallel()
	got := make(chan struct{})
	stream := func(length bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if length {
				w.Header().Set("Content-Length", "14")
			}
			io.WriteString(w, "event1\n")
			w.(http.Flusher).Flush()
			select { // the second part only once the first has come
			case <-got:
			case <-time.After(10 * time.Second):
			}
			io.WriteString(w, "event2\n")
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/chunked", stream(false))
	mux.Handle("/length", stream(true))
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, mux, "api.test")
	f.rules["s"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port)}}}}
	c := f.sandboxClient(t, "s")
	for _, path := range []string{"/chunked", "/length"} {
		start := time.Now()
		resp, err := c.Get(fmt.Sprintf("https://api.test:%d%s", port, path))
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		first, err := br.ReadString('\n')
		if err != nil || first != "event1\n" || time.Since(start) > 5*time.Second {
			t.Fatalf("%s: the first part %q (%v) came after %v: the proxy held it back", path, first, err, time.Since(start))
		}
		select {
		case got <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the host no longer waits", path)
		}
		if rest, err := io.ReadAll(br); err != nil || string(rest) != "event2\n" {
			t.Fatalf("%s: the rest %q: %v", path, rest, err)
		}
		resp.Body.Close()
	}
}

// rawLooked opens a tunnel to host:port through the proxy at addr and
// speaks TLS in it (trusting roots, or anything when roots is nil).
func rawLooked(t *testing.T, addr, host string, port int, roots *x509.CertPool) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", host, port, host, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s:%d: %v %v", host, port, resp, err)
	}
	tc := tls.Client(withBuffer(c, br), &tls.Config{ServerName: "api.test", RootCAs: roots, InsecureSkipVerify: roots == nil})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc
}

func (f *lookFixture) engineRoots(t *testing.T) *x509.CertPool {
	pemCA, err := f.ca.CertPEM()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemCA)
	return roots
}

// TestAnInterimAnswerDoesNotShiftTheAnswers: a host that sends an
// interim answer (103 Early Hints, or 100 Continue to an Expect the proxy
// passes on) before its final one: the proxy gave the interim answer as
// the answer and left the final one, which quotes the value, to be read
// as the answer to the sandbox's next request, which carried no value:
// unmasked. The sandbox gets each final answer for its own request.
func TestAnInterimAnswerDoesNotShiftTheAnswers(t *testing.T) {
	for _, c := range []struct{ name, first string }{
		{"early_hints", "GET /first HTTP/1.1\r\nHost: api.test:%d\r\nAuthorization: Bearer " + ph + "\r\nX-Hints: 1\r\n\r\n"},
		{"expect_continue", "POST /first HTTP/1.1\r\nHost: api.test:%d\r\nAuthorization: Bearer " + ph + "\r\nExpect: 100-continue, 100-continue\r\nContent-Length: 2\r\n\r\nhi"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newLookFixture(t, map[string]Rules{}, true)
			port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				if r.Header.Get("X-Hints") != "" {
					w.Header().Set("Link", "</a.css>; rel=preload")
					w.WriteHeader(http.StatusEarlyHints)
				}
				fmt.Fprintf(w, "%s auth=%s", r.URL.Path, r.Header.Get("Authorization"))
			}), "api.test")
			f.rules["i"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization"}}}
			tc := rawLooked(t, f.listen(t, "i"), "api.test", port, f.engineRoots(t))
			br := bufio.NewReader(tc)
			fmt.Fprintf(tc, c.first, port)
			second := fmt.Sprintf("GET /second HTTP/1.1\r\nHost: api.test:%d\r\n\r\n", port)
			var finals []string
			sent := false
			for len(finals) < 2 {
				// A client that waits for the final answer and gives up
				// sends its next request.
				_ = tc.SetReadDeadline(time.Now().Add(2 * time.Second))
				resp, err := http.ReadResponse(br, nil)
				if err != nil && !sent {
					_ = tc.SetReadDeadline(time.Time{})
					io.WriteString(tc, second)
					sent = true
					continue
				}
				if err != nil {
					t.Fatalf("after %q: %v", finals, err)
				}
				b, _ := io.ReadAll(resp.Body)
				if strings.Contains(string(b), "REAL-VALUE") {
					t.Fatalf("the sandbox read the value: %d %q after %q", resp.StatusCode, b, finals)
				}
				if resp.StatusCode < 200 {
					continue
				}
				finals = append(finals, string(b))
				if !sent {
					io.WriteString(tc, second)
					sent = true
				}
			}
			if want := []string{"/first auth=Bearer " + strings.Repeat("*", len("REAL-VALUE-gh")), "/second auth="}; finals[0] != want[0] || finals[1] != want[1] {
				t.Fatalf("final answers %q, want %q", finals, want)
			}
		})
	}
}

// TestAnAnswersTrailersAreMasked: a host that quotes the value in a
// trailer of its answer: the trailer is masked as the header and the
// body are.
func TestAnAnswersTrailersAreMasked(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Echo")
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
	}), "api.test")
	f.rules["tr"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization"}}}
	resp, body := do(t, f.sandboxClient(t, "tr"), "GET", fmt.Sprintf("https://api.test:%d/", port), map[string]string{"Authorization": "Bearer " + ph}, "")
	if got := resp.Trailer.Get("X-Echo"); resp.StatusCode != 200 || body != "body" || got != "Bearer "+strings.Repeat("*", len("REAL-VALUE-gh")) {
		t.Fatalf("%d %q, trailer X-Echo %q", resp.StatusCode, body, got)
	}
}

// TestAStreamedAnswerToASecretsRequestIsNotHeldBack: the answer to a
// request that carried a value (a streamed completion from an LLM API
// whose key the proxy put in) reaches the sandbox part by part: the mask
// holds back only what may begin the value, not the last bytes of every
// part until the next comes.
func TestAStreamedAnswerToASecretsRequestIsNotHeldBack(t *testing.T) {
	t.Parallel()
	got := make(chan struct{})
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select { // the second event only once the first has come
		case <-got:
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "data: two "+r.Header.Get("Authorization")+"\n\n")
	}), "api.test")
	f.rules["s"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization"}}}
	req, _ := http.NewRequest("POST", fmt.Sprintf("https://api.test:%d/v1/messages", port), strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+ph)
	start := time.Now()
	resp, err := f.sandboxClient(t, "s").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for _, want := range []string{"data: one\n", "\n"} {
		if line, err := br.ReadString('\n'); err != nil || line != want || time.Since(start) > 5*time.Second {
			t.Fatalf("the first event: %q (%v) after %v, want %q: the proxy held it back", line, err, time.Since(start), want)
		}
	}
	got <- struct{}{}
	if rest, err := io.ReadAll(br); err != nil || string(rest) != "data: two Bearer "+strings.Repeat("*", len("REAL-VALUE-gh"))+"\n\n" {
		t.Fatalf("the rest %q: %v", rest, err)
	}
}

// TestRedactReaderMasksAValueSplitAcrossReads: a value that comes in
// parts, after bytes that begin it, is masked however the reads cut it,
// and the body keeps its length.
func TestRedactReaderMasksAValueSplitAcrossReads(t *testing.T) {
	t.Parallel()
	values := []string{"REAL-VALUE-gh", "abcabd"}
	data := "xREAL-REAL-VALUE-ghREAL-VALUE-ghyabcabcabdzREAL-VALUE-g"
	want := "xREAL-" + strings.Repeat("*", 26) + "yabc******zREAL-VALUE-g"
	for _, chunk := range []int{1, 2, 3, 5, 7, 13, 100} {
		b, err := io.ReadAll(newRedactReader(io.NopCloser(&chunked{s: data, n: chunk}), values, nil))
		if err != nil || string(b) != want {
			t.Fatalf("reads of %d: %q (%v), want %q", chunk, b, err, want)
		}
	}
}

// TestARefusalAfterASwapDoesNotQuoteTheValue: a secret without a header
// goes anywhere in the request head, the path too; a request that
// carries it there to its host and is then refused for a second secret's
// placeholder (in a header, or in the body) was refused with the path as
// swapped: the value, in the 403 the sandbox reads and in the refusal
// the run reports. Refusals and the requests the proxy reports quote the
// path the sandbox sent.
func TestARefusalAfterASwapDoesNotQuoteTheValue(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	var seen sync.Map
	port := f.upstream.ServeTLS(t, echo(&seen), "api.test")
	var mu sync.Mutex
	var reported []string
	f.p.opts.OnRequest = func(_, _ string, _ int, method, path string) {
		mu.Lock()
		reported = append(reported, method+" "+path)
		mu.Unlock()
	}
	const token2 = "fedcba9876543210fedcba9876543210"
	f.rules["a"] = Rules{Network: true, Secrets: []SecretUse{
		{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}},
		{Name: "np", Token: token2, Hosts: []string{"other.test"}},
	}}
	c := f.sandboxClient(t, "a")
	url := fmt.Sprintf("https://api.test:%d/keys/%s", port, ph)
	for _, r := range []struct {
		name, method string
		header       map[string]string
		body         string
	}{
		{"in_a_header", "GET", map[string]string{"X-Other": Placeholder("np", token2)}, ""},
		{"in_the_body", "POST", nil, "x=" + Placeholder("np", token2)},
		{"in_a_long_body", "POST", nil, strings.Repeat("x", prescanBytes+10) + Placeholder("np", token2)},
	} {
		t.Run(r.name, func(t *testing.T) {
			resp, body := do(t, c, r.method, url, r.header, r.body)
			if resp.StatusCode != http.StatusForbidden || strings.Contains(body+resp.Header.Get("X-Senclaw-Refused"), "REAL-VALUE") {
				t.Fatalf("%d %q (X-Senclaw-Refused %q)", resp.StatusCode, body, resp.Header.Get("X-Senclaw-Refused"))
			}
		})
	}
	for _, r := range f.refusals() {
		if strings.Contains(fmt.Sprintf("%+v", r), "REAL-VALUE") {
			t.Errorf("a refusal quotes the value: %+v", r)
		}
	}
	mu.Lock()
	for _, r := range reported {
		if strings.Contains(r, "REAL-VALUE") {
			t.Errorf("a reported request quotes the value: %q", r)
		}
	}
	mu.Unlock()
	// The swap itself still happens: the host sees the value in the path.
	do(t, c, "GET", url, nil, "")
	if _, ok := seen.Load("GET /keys/REAL-VALUE-gh"); !ok {
		t.Error("the value was not put in the path of a request to its host")
	}
}

// TestAnUpgradedStreamIsMasked: after a 101 to an upgrade request that
// carried a value, what the host sends on (a WebSocket's frames) is
// masked as an answer is, and the request asks for no compression of
// the stream (which would hide the value from the mask).
func TestAnUpgradedStreamIsMasked(t *testing.T) {
	t.Parallel()
	exts := make(chan string, 1)
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exts <- r.Header.Get("Sec-WebSocket-Extensions")
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nhello %s\n", r.Header.Get("Authorization"))
		brw.Flush()
		io.Copy(io.Discard, brw) // until the sandbox closes
	}), "api.test")
	f.rules["w"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization"}}}
	tc := rawLooked(t, f.listen(t, "w"), "api.test", port, f.engineRoots(t))
	fmt.Fprintf(tc, "GET /ws HTTP/1.1\r\nHost: api.test:%d\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n", port, ph)
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("%v %v", resp, err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "hello Bearer "+strings.Repeat("*", len("REAL-VALUE-gh"))+"\n" {
		t.Fatalf("the upgraded stream: %q (%v)", line, err)
	}
	if e := <-exts; e != "" {
		t.Errorf("the upgrade request asked the host for Sec-WebSocket-Extensions %q", e)
	}
}
