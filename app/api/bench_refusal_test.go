package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/tokens"
)

// TestBenchRefusals measures what a refused request costs end to end
// through the socket (a real Serve, its client keeping the connection as
// the CLI's does): an agent's PUT /exec-policy refused by scope, a GET
// /sandboxes refused by its tool policy, the MCP face's question for a
// tool outside it, and an allowed GET /status beside them. Target: a
// refusal under 1 ms. `make bench` runs it; it is skipped otherwise.
func TestBenchRefusals(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	e := testEngine(t)
	reg, err := tokens.New(tokens.Options{Docs: e.TokenDocs()})
	if err != nil {
		t.Fatal(err)
	}
	limited, err := reg.Add("bench", "agent", "", []string{"sbx_run"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Engine: e, Token: testToken, Tokens: reg})
	rt := filepath.Join(testDir(t), "rt")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan DaemonInfo, 1)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, DaemonOptions{RuntimeDir: rt, Ready: func(i DaemonInfo) { ready <- i }}) }()
	info := <-ready
	defer func() { cancel(); <-done }()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", info.Socket)
	}}}
	send := func(method, path string, want int) error {
		req, _ := http.NewRequest(method, "http://senclaw/api/sandbox"+path, strings.NewReader(`{"runPython":false}`))
		req.Header.Set("Authorization", "Bearer "+limited.Secret)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
		}
		return nil
	}
	cases := []struct {
		name, method, path string
		want               int
		took               []time.Duration
	}{
		{name: "refused by scope (PUT /exec-policy)", method: "PUT", path: "/exec-policy", want: 403},
		{name: "refused by tool policy (GET /sandboxes)", method: "GET", path: "/sandboxes", want: 403},
		{name: "MCP gate refusal (GET /whoami?tool=)", method: "GET", path: "/whoami?tool=sbx_exec", want: 403},
		{name: "allowed (GET /status)", method: "GET", path: "/status", want: 200},
	}
	const warmup, runs = 200, 2000
	for i := 0; i < warmup+runs; i++ {
		for j := range cases {
			c := &cases[j]
			start := time.Now()
			if err := send(c.method, c.path, c.want); err != nil {
				t.Fatal(err)
			}
			if i >= warmup {
				c.took = append(c.took, time.Since(start))
			}
		}
	}
	for _, c := range cases {
		slices.Sort(c.took)
		med, p99 := c.took[len(c.took)/2], c.took[len(c.took)*99/100]
		fmt.Printf("BENCH refusal %-42s median %6.1f µs  p99 %6.1f µs\n", c.name, float64(med)/1e3, float64(p99)/1e3)
		if c.want == 403 && med > time.Millisecond {
			t.Errorf("%s: median %v, target under 1 ms", c.name, med)
		}
	}
}

// BenchmarkScopeCheck is what the principal and scope check cost a
// request, alone: deciding who sent it (the socket's owner; an agent's
// token, hashed and compared) and the table's decision for its route.
// go test -run '^$' -bench ScopeCheck ./app/api
func BenchmarkScopeCheck(b *testing.B) {
	fs, err := fuzzServer()
	if err != nil {
		b.Fatal(err)
	}
	route, _ := principal.Lookup("POST /api/sandbox/run-once")
	for _, tc := range []struct {
		name, tok string
	}{{"owner_socket", ""}, {"agent_token", fs.tokens[2]}} {
		b.Run(tc.name, func(b *testing.B) {
			req, _ := http.NewRequestWithContext(WithTransport(context.Background(), "socket", nil), "POST", "http://senclaw/api/sandbox/run-once", nil)
			if tc.tok != "" {
				req.Header.Set("Authorization", "Bearer "+tc.tok)
			}
			w := &recorder{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				p, ok := fs.s.authorize(w, req)
				if !ok || principal.Allow(p, route) != nil {
					b.Fatal("refused")
				}
				_ = principal.With(req.Context(), p)
			}
		})
	}
}
