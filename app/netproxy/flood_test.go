package netproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// heapInUse is the heap the process holds now.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Sandboxed code floods the proxy socket from several connections at once
// with request heads that never end: a header line of hundreds of MiB, and
// a CONNECT line as long. The proxy's memory stays bounded (it used to
// read each line whole: 18 MB to 4 GB RSS in 12 s), each flood is answered
// 431 and counted as a refusal. Not parallel: it measures the process's
// heap, which other tests would move.
func TestFloodedProxyStaysSmall(t *testing.T) {
	p := testProxy(map[string]Rules{"s": {Network: true}}, nil)
	sock := proxySocket(t, p, "s")
	const (
		perConn = 256 << 20 // what each connection would send
		bound   = 64 << 20  // the heap growth the test allows
	)
	heads := []string{
		"GET http://127.0.0.1:9/ HTTP/1.1\r\nX-A: ",
		"CONNECT ",
		"GET http://127.0.0.1:9/ HTTP/1.1\r\nX-A: ",
		"CONNECT ",
	}
	runtime.GC()
	base := heapInUse()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	answers := make([]string, len(heads))
	var conns []net.Conn
	for i, head := range heads {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		wg.Add(2)
		go func() {
			defer wg.Done()
			line := make([]byte, 8<<10)
			n, _ := io.ReadFull(c, line)
			answers[i] = string(line[:n])
		}()
		go func() {
			defer wg.Done()
			if _, err := io.WriteString(c, head); err != nil {
				return
			}
			chunk := bytes.Repeat([]byte("A"), 64<<10)
			for sent := 0; sent < perConn; sent += len(chunk) {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Write(chunk); err != nil {
					return // the proxy hung up: what we want
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	peak := base
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
wait:
	for {
		select {
		case <-done:
			break wait
		case <-deadline:
			t.Error("the floods did not end within 2 minutes")
			break wait
		case <-tick.C:
			if h := heapInUse(); h > peak {
				peak = h
			}
			if peak > base+bound {
				t.Errorf("the proxy's heap grew by %d MiB while sandboxed code flooded it (bound %d MiB)", (peak-base)>>20, bound>>20)
				break wait
			}
		}
	}
	if h := heapInUse(); h > peak {
		peak = h
	}
	close(stop)
	for _, c := range conns {
		c.Close()
	}
	<-done
	t.Logf("heap growth at most %d KiB", (peak-base)>>10)
	for i, a := range answers {
		if !strings.HasPrefix(a, "HTTP/1.1 431 ") || !strings.Contains(a, "64 KiB") {
			t.Errorf("flood %d (%q...) was answered %q", i, heads[i][:8], firstLine(a))
		}
	}
	if n, hosts := p.Denials("s"); n < len(heads) || !slices.Contains(hosts, "(proxy)") {
		t.Errorf("the floods were not counted as refusals: %d %v", n, hosts)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Heads within the bounds pass, and the bounds hold for many short header
// lines as for one long one, and for an upstream's answer as for a
// request.
func TestHeadBounds(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("v", MaxHeadBytes)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/huge" {
			w.Header().Set("X-Huge", huge)
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	remote := strings.TrimPrefix(srv.URL, "http://")
	p := testProxy(map[string]Rules{"s": {Network: true}}, map[string]string{"example.test": "127.0.0.1"}, remote)
	sock := proxySocket(t, p, "s")
	_, port, _ := net.SplitHostPort(remote)
	target := "http://example.test:" + port
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("X-" + strings.Repeat("k", i%7+1) + ": v\r\n")
		}
		return b.String()
	}
	cases := []struct {
		name, req, status string
	}{
		{"plain", "GET " + target + "/ HTTP/1.1\r\nHost: example.test\r\n\r\n", "HTTP/1.1 200 "},
		{"large_but_within", "GET " + target + "/ HTTP/1.1\r\nHost: example.test\r\nX-A: " + strings.Repeat("a", MaxHeadBytes-200) + "\r\n\r\n", "HTTP/1.1 200 "},
		{"bare_newlines", "GET " + target + "/ HTTP/1.1\nHost: example.test\n\n", "HTTP/1.1 200 "},
		{"header_too_long", "GET " + target + "/ HTTP/1.1\r\nX-A: " + strings.Repeat("a", MaxHeadBytes) + "\r\n\r\n", "HTTP/1.1 431 "},
		{"too_many_lines", "GET " + target + "/ HTTP/1.1\r\n" + many(maxHeadLines) + "\r\n", "HTTP/1.1 431 "},
		{"many_lines_within", "GET " + target + "/ HTTP/1.1\r\n" + many(maxHeadLines-2) + "\r\n", "HTTP/1.1 200 "},
		{"connect_line_too_long", "CONNECT " + strings.Repeat("a", MaxHeadBytes) + ":443 HTTP/1.1\r\n\r\n", "HTTP/1.1 431 "},
		{"upstream_head_too_long", "GET " + target + "/huge HTTP/1.1\r\nHost: example.test\r\n\r\n", "HTTP/1.1 502 "},
		{"malformed", "\r\n\r\n", "HTTP/1.1 400 "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			go io.WriteString(c, tc.req)
			line, _ := bufio.NewReader(c).ReadString('\n')
			if tc.status == "" {
				if strings.HasPrefix(line, "HTTP/1.1 200") {
					t.Errorf("answered %q", line)
				}
				return
			}
			if !strings.HasPrefix(line, tc.status) {
				t.Errorf("answered %q, want %q", line, tc.status)
			}
		})
	}
	// A kept-alive connection: each request's head is bounded on its own.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	one := "GET " + target + "/ HTTP/1.1\r\nHost: example.test\r\nX-A: " + strings.Repeat("a", MaxHeadBytes/2) + "\r\n\r\n"
	go io.WriteString(c, one+one+one)
	br := bufio.NewReader(c)
	for i := range 3 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d on one connection: %v %v", i, resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// The SOCKS5 handshake is bounded by its own one-byte lengths; a name with
// control characters or a doubled trailing dot meets the same normaliser
// and rules as an HTTP request's.
func TestSocksNamesMeetTheNormaliser(t *testing.T) {
	t.Parallel()
	rules := map[string]Rules{"s": {Network: true, Ports: backends.PortRules{DenyDomains: []string{"example.com"}}}}
	p := testProxy(rules, map[string]string{"example.com": "93.184.215.14"})
	sock := proxySocket(t, p, "s")
	for _, host := range []string{"example.com..", "EXAMPLE.com.", "exa\x1bmple.com", strings.Repeat("a", 255)} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		req := append([]byte{5, 1, 0, 5, 1, 0, 3, byte(len(host))}, host...)
		req = append(req, 1, 187)
		go c.Write(req)
		head := make([]byte, 12)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, head); err != nil || head[3] != socksNotAllowed {
			t.Errorf("socks %q: reply %v %v", host, head, err)
		}
		c.Close()
	}
	if n, _ := p.Denials("s"); n != 4 {
		t.Errorf("%d refusals counted, want 4", n)
	}
}
