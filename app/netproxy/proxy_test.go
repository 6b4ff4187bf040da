package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// testProxy is a proxy whose resolver answers from a table (no query
// leaves the machine) and that treats only the addresses in remote as
// remote hosts; the local-address check stays on for everything else.
func testProxy(rules map[string]Rules, names map[string]string, remote ...string) *Proxy {
	return New(Options{
		Rules: func(id string) (Rules, bool) { r, ok := rules[id]; return r, ok },
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if a, ok := names[host]; ok {
				return []netip.Addr{netip.MustParseAddr(a)}, nil
			}
			return nil, errors.New("no such host")
		},
		TreatAsRemote: func(ap netip.AddrPort) bool {
			for _, r := range remote {
				if ap.String() == r {
					return true
				}
			}
			return false
		},
		Protected: func(p int) bool { return p == 7878 },
	})
}

func TestDecide(t *testing.T) {
	t.Parallel()
	names := map[string]string{
		"example.test": "127.0.0.1", "rebind.test": "127.0.0.1", "public.test": "93.184.215.14",
		"private.test": "10.1.2.3", "meta.test": "169.254.169.254", "v6meta.test": "fd00:ec2::254", "cgnat.test": "100.64.1.1",
	}
	rules := map[string]Rules{
		"on":       {Network: true},
		"off":      {},
		"connect":  {Ports: backends.PortRules{Connect: []int{443}}},
		"loop":     {Ports: backends.PortRules{Loopback: []int{5432, 7878}}},
		"domains":  {Network: true, Ports: backends.PortRules{Domains: []string{"*.test"}, DenyDomains: []string{"private.test"}}},
		"onByName": {Network: true, Ports: backends.PortRules{Domains: []string{"example.test"}}},
	}
	p := testProxy(rules, names, "127.0.0.1:8080")
	cases := []struct {
		id, host string
		port     int
		ok       bool
	}{
		{"on", "public.test", 443, true},
		{"on", "93.184.215.14", 1234, true},
		{"on", "example.test", 8080, true}, // the one test address treated as remote
		{"on", "rebind.test", 9999, false}, // resolves to 127.0.0.1: refused
		{"on", "127.0.0.1", 9999, false},
		{"on", "localhost", 9999, false},
		{"on", "0.0.0.0", 9999, false},
		{"on", "private.test", 80, false},
		{"on", "meta.test", 80, false},
		{"on", "v6meta.test", 80, false},
		{"on", "cgnat.test", 80, false},
		{"on", "::ffff:10.0.0.1", 80, false},
		{"on", "64:ff9b::a00:1", 80, false},
		{"on", "fe80::1", 80, false},
		{"off", "public.test", 443, false},
		{"off", "127.0.0.1", 5432, false},
		{"gone", "public.test", 443, false},
		{"connect", "public.test", 443, true},
		{"connect", "public.test", 80, false},
		{"loop", "127.0.0.1", 5432, true},
		{"loop", "::1", 5432, true},
		{"loop", "localhost", 5432, true},
		{"loop", "127.0.0.2", 5432, false},
		{"loop", "127.0.0.1", 5433, false},
		{"loop", "127.0.0.1", 7878, false}, // the engine's API, even if listed
		{"loop", "public.test", 5432, false},
		{"domains", "public.test", 443, true},
		{"domains", "private.test", 443, false}, // deny wins
		{"domains", "example.org", 443, false},
		{"domains", "93.184.215.14", 443, false}, // no literals with an allowlist
		{"onByName", "example.test", 8080, true},
		{"onByName", "public.test", 443, false},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s_%s_%d", tc.id, tc.host, tc.port), func(t *testing.T) {
				t.Parallel()
				_, err := p.decide(context.Background(), tc.id, tc.host, tc.port)
				var d *Denied
				if tc.ok != (err == nil) || (err != nil && !errors.As(err, &d)) {
					t.Errorf("decide = %v, want ok=%v", err, tc.ok)
				}
			})
		}
	})
	if n, recent := p.Denials("on"); n == 0 || len(recent) == 0 || len(recent) > recentKept {
		t.Errorf("denials %d %v", n, recent)
	}
}

func TestNormalizeDomains(t *testing.T) {
	t.Parallel()
	got, _, err := NormalizeDomains([]string{"Example.COM.", "*.Bücher.de", "example.com"}, true)
	if err != nil || strings.Join(got, ",") != "*.xn--bcher-kva.de,example.com" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"10.0.0.1", "[::1]", "a.*.com", "*", "localhost", "exa mple.com", "-a.com", ""} {
		if _, _, err := NormalizeDomains([]string{bad}, true); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	many := make([]string, MaxDomains+1)
	for i := range many {
		many[i] = fmt.Sprintf("h%d.test", i)
	}
	if _, _, err := NormalizeDomains(many, true); err == nil {
		t.Error("65 names accepted")
	}
}

// TestProtocols speaks HTTP (absolute-form and CONNECT) and SOCKS5 to a
// session's socket, like the forwarder does for sandboxed clients.
func TestProtocols(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "remote-ok "+r.URL.Path) }))
	defer srv.Close()
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "local") }))
	defer local.Close()
	remote := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(remote)
	p := testProxy(map[string]Rules{"s": {Network: true}}, map[string]string{"example.test": "127.0.0.1"}, remote)
	sock := proxySocket(t, p, "s")
	client := &http.Client{Transport: &http.Transport{
		Proxy:       http.ProxyURL(mustURL("http://proxy")),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return net.Dial("unix", sock) },
	}}
	resp, err := client.Get("http://example.test:" + port + "/a")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "remote-ok /a" {
		t.Errorf("absolute-form: %d %q", resp.StatusCode, body)
	}
	resp, err = client.Get(local.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "127.0.0.1") || !strings.Contains(string(body), "loopback") {
		t.Errorf("local service: %d %q", resp.StatusCode, body)
	}
	// CONNECT, then HTTP inside the tunnel.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT example.test:%s HTTP/1.1\r\nHost: example.test:%s\r\n\r\nGET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port, port)
	all, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(all), "HTTP/1.1 200 Connection established") || !strings.Contains(string(all), "remote-ok /t") {
		t.Errorf("CONNECT: %q", all)
	}
	// SOCKS5 with a domain name, then a refused one.
	for _, tc := range []struct {
		host string
		port string
		rep  byte
	}{{"example.test", port, 0}, {"localhost", strings.Split(local.URL, ":")[2], 2}} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		var pn int
		fmt.Sscan(tc.port, &pn)
		req := append([]byte{5, 1, 0, 5, 1, 0, 3, byte(len(tc.host))}, tc.host...)
		req = append(req, byte(pn>>8), byte(pn))
		c.Write(req)
		br := bufio.NewReader(c)
		head := make([]byte, 12)
		if _, err := io.ReadFull(br, head); err != nil || head[3] != tc.rep {
			t.Errorf("socks %s: reply %v %v", tc.host, head, err)
		}
		c.Close()
	}
}

func TestListenForwardAndPortInUse(t *testing.T) {
	t.Parallel()
	p := testProxy(map[string]Rules{"s": {}}, nil)
	dir := filepath.Join(t.TempDir(), "n")
	if err := PrepareDir(dir, -1, -1); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	if _, err := p.Acquire("s", dir, []int{port}); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("a busy port: %v", err)
	}
	busy.Close()
	// The forwarder's side: a Unix socket answering for the port.
	inner, err := net.Listen("unix", filepath.Join(dir, "listen-"+fmt.Sprint(port)+".sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	go func() {
		c, err := inner.Accept()
		if err == nil {
			io.WriteString(c, "hello")
			c.Close()
		}
	}()
	release, err := p.Acquire("s", dir, []int{port})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "hello" {
		t.Errorf("forwarded %q", got)
	}
	release()
	if _, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		t.Error("the host port stays open after the last release")
	}
	if _, err := os.Stat(filepath.Join(dir, "proxy.sock")); !os.IsNotExist(err) {
		t.Errorf("the proxy socket stays after the last release: %v", err)
	}
}

func mustURL(s string) *url { u, _ := parseURL(s); return u }

type url = neturl.URL

var parseURL = neturl.Parse

// Plain-HTTP answers of every shape pass through whole (a large download,
// HEAD, small, chunked, 304), and the client's connection stays usable
// for the next request.
func TestPlainHTTPBodies(t *testing.T) {
	t.Parallel()
	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Header().Set("X-Kind", "big")
			w.Write(big)
		case "/chunked":
			for i := 0; i < 4; i++ {
				w.Write(big[:1<<20])
				w.(http.Flusher).Flush()
			}
		case "/cached":
			w.WriteHeader(http.StatusNotModified)
		default:
			io.WriteString(w, "small")
		}
	}))
	defer srv.Close()
	remote := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(remote)
	p := testProxy(map[string]Rules{"s": {Network: true}}, map[string]string{"example.test": "127.0.0.1"}, remote)
	sock := proxySocket(t, p, "s")
	var dials atomic.Int32
	client := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(mustURL("http://proxy")),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			dials.Add(1)
			return net.Dial("unix", sock)
		},
		DisableCompression: true,
	}}
	base := "http://example.test:" + port
	for _, tc := range []struct {
		method, path string
		code         int
		body         []byte
	}{
		{"GET", "/big", 200, big},
		{"HEAD", "/big", 200, nil},
		{"GET", "/small", 200, []byte("small")},
		{"GET", "/chunked", 200, bytes.Repeat(big[:1<<20], 4)},
		{"GET", "/cached", 304, nil},
		{"GET", "/big", 200, big},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.code || !bytes.Equal(body, tc.body) {
			t.Fatalf("%s %s: %d, %d bytes, %v; want %d, %d bytes", tc.method, tc.path, resp.StatusCode, len(body), err, tc.code, len(tc.body))
		}
		if tc.path == "/big" && (resp.Header.Get("X-Kind") != "big" || resp.ContentLength != int64(len(big))) {
			t.Errorf("%s /big: headers %v, length %d", tc.method, resp.Header, resp.ContentLength)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the client dialled the proxy %d times; the connection should have been kept alive", n)
	}
}

// proxySocket starts p's plumbing for sandbox id in a temporary directory
// and returns the path of its proxy socket.
func proxySocket(t *testing.T, p *Proxy, id string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "n")
	if err := PrepareDir(dir, -1, -1); err != nil {
		t.Fatal(err)
	}
	release, err := p.Acquire(id, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return filepath.Join(dir, "proxy.sock")
}

// The sandbox owns its network directory: a listen socket it swaps for a
// symlink (to an engine's socket, say) or a plain file is not followed;
// the host connection is dropped, and the proxy socket's mode is set on
// the proxy socket alone.
func TestListenForwardFollowsNoSymlink(t *testing.T) {
	t.Parallel()
	p := testProxy(map[string]Rules{"s": {Network: true}}, nil)
	dir := filepath.Join(t.TempDir(), "n")
	if err := PrepareDir(dir, -1, -1); err != nil {
		t.Fatal(err)
	}
	secretDir := t.TempDir()
	secret, err := net.Listen("unix", filepath.Join(secretDir, "engine.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer secret.Close()
	go func() {
		for {
			c, err := secret.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "secret")
			c.Close()
		}
	}()
	port := testutil.FreePort(t)
	release, err := p.Acquire("s", dir, []int{port})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	name := filepath.Join(dir, "listen-"+fmt.Sprint(port)+".sock")
	for _, plant := range []func() error{
		func() error { return os.Symlink(filepath.Join(secretDir, "engine.sock"), name) },
		func() error { return os.WriteFile(name, []byte("x"), 0o600) },
	} {
		os.Remove(name)
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(c)
		c.Close()
		if len(got) != 0 {
			t.Fatalf("the host connection reached %q through what the sandbox put in its directory", got)
		}
	}
	if fi, err := os.Stat(filepath.Join(secretDir, "engine.sock")); err != nil || fi.Mode().Perm() == 0o666 {
		t.Errorf("the engine's socket mode changed: %v %v", fi.Mode(), err)
	}
}

// A sandbox cannot hold more than MaxConns proxy connections open: the
// next one is closed at once and counted, and a freed slot serves again.
func TestProxyConnectionBound(t *testing.T) {
	t.Parallel()
	p := testProxy(map[string]Rules{"s": {Network: true}}, nil)
	sock := proxySocket(t, p, "s")
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range MaxConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	// probe dials and reports whether the connection reached the proxy
	// and whether the proxy hung up on it. A dial that fails (the listen
	// backlog full on a loaded machine) says nothing either way.
	probe := func() (reached, closed bool) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			return false, false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		return true, errors.Is(err, io.EOF)
	}
	var over bool
	for deadline := time.Now().Add(5 * time.Second); !over && time.Now().Before(deadline); {
		_, over = probe() // the accepts of the first ones may still be on their way
	}
	if !over {
		t.Fatalf("connection %d was served", MaxConns+1)
	}
	counted := false
	for deadline := time.Now().Add(5 * time.Second); !counted && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n, hosts := p.Denials("s")
		counted = n > 0 && slices.Contains(hosts, "(proxy)")
	}
	if !counted {
		n, hosts := p.Denials("s")
		t.Errorf("the refused connection was not counted: %d %v", n, hosts)
	}
	open[0].Close()
	open = open[1:]
	var served bool
	for deadline := time.Now().Add(5 * time.Second); !served && time.Now().Before(deadline); {
		reached, closed := probe()
		served = reached && !closed
	}
	if !served {
		t.Error("a freed slot did not serve a new connection")
	}
}

// A sandbox on another machine has no directory here: AcquireRelay
// answers the connections its backend brings with the sandbox's rules,
// and 127.0.0.1:P here reaches its listen port through the dial given.
func TestRelaySessionsApplyTheRulesAndForwardListenPorts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "remote-ok") }))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	p := testProxy(map[string]Rules{"far": {Network: true}}, map[string]string{"example.test": "127.0.0.1"}, addr)
	defer p.Close()
	listen := testutil.FreePort(t)
	inside, outside := net.Pipe()
	go func() {
		defer inside.Close()
		io.WriteString(inside, "from the sandbox")
	}()
	serve, release, err := p.AcquireRelay("far", []int{listen}, func(port int) (net.Conn, error) {
		if port != listen {
			return nil, fmt.Errorf("dial of port %d", port)
		}
		return outside, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// What the sandbox opens comes in through serve.
	c1, c2 := net.Pipe()
	go serve(c2)
	_, port, _ := net.SplitHostPort(addr)
	fmt.Fprintf(c1, "GET http://example.test:%s/ HTTP/1.0\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(c1), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	c1.Close()
	if string(body) != "remote-ok" {
		t.Fatalf("through the relay: %d %q", resp.StatusCode, body)
	}
	// A connection to the listen port here reaches the sandbox's.
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(listen))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "from the sandbox" {
		t.Fatalf("the listen port: %q", got)
	}
	// A second run shares the session; the last release ends it.
	serve2, release2, err := p.AcquireRelay("far", nil, nil)
	if err != nil || serve2 == nil {
		t.Fatalf("a second run's relay: %v", err)
	}
	release()
	release2()
	if len(p.Sessions()) != 0 {
		t.Fatalf("sessions left: %v", p.Sessions())
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(listen)); err == nil {
		c.Close()
		t.Fatal("the listen port still answers after the last release")
	}
}
