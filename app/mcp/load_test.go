package mcp_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
)

// mcpLoad opens sessions MCP sessions over Streamable HTTP at once, with
// the official SDK client, and has each do runs one-shot sbx_run calls
// one after the other. It returns every call's latency, sorted, and the
// errors (a failed call, a tool error, a run that did not exit 0).
func mcpLoad(t *testing.T, d *httpDaemon, sessions, runs int) ([]time.Duration, []error) {
	t.Helper()
	css := make([]*sdk.ClientSession, sessions)
	for i := range css {
		css[i] = connectHTTP(t, d, nil)
	}
	var mu sync.Mutex
	var lat []time.Duration
	var errs []error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, cs := range css {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < runs; j++ {
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "sbx_run", Arguments: map[string]any{"command": fmt.Sprintf("echo %d-%d", i, j)}})
				d := time.Since(t0)
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %v", res.Content)
				}
				if err == nil {
					if run, _ := res.StructuredContent.(map[string]any)["run"].(map[string]any); run == nil || run["ok"] != true {
						err = fmt.Errorf("the run did not succeed: %v", res.StructuredContent)
					}
				}
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					errs = append(errs, fmt.Errorf("session %d run %d: %w", i, j, err))
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return lat, errs
}

// quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// recordedMCPRuns counts the runs of source mcp the engine stored that
// ended well.
func recordedMCPRuns(t *testing.T, e *app.Engine) int {
	t.Helper()
	all, err := e.RunsPage("", app.ListQuery{Source: app.SourceMCP, Limit: 5000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range all.Runs {
		if r.State == "done" && r.OK() {
			n++
		}
	}
	return n
}

// manySessions lets a token hold the sessions of the load.
func manySessions() (time.Duration, int) { return 30 * time.Minute, 100 }

// TestFiftySessionsAtOnce: 50 MCP sessions over Streamable
// HTTP at once, each doing one-shot runs under bwrap: no call fails, and
// every run is recorded. (make bench measures 20 runs each.)
func TestFiftySessionsAtOnce(t *testing.T) {
	t.Parallel()
	d := startHTTPDaemon(t, manySessions)
	lat, errs := mcpLoad(t, d, 50, 4)
	for _, err := range errs {
		t.Error(err)
	}
	if n := recordedMCPRuns(t, d.engine); n != 200 {
		t.Fatalf("%d runs recorded, want 200", n)
	}
	t.Logf("50 sessions x 4 runs: p50 %v, p99 %v", quantile(lat, 0.5), quantile(lat, 0.99))
}

// TestBenchMCPSessions measures 50 MCP sessions at once over Streamable
// HTTP, each doing 20 one-shot runs: the latency of a run's
// call, p50 and p99. `make bench` runs it; it is skipped otherwise.
func TestBenchMCPSessions(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	d := startHTTPDaemon(t, manySessions)
	start := time.Now()
	lat, errs := mcpLoad(t, d, 50, 20)
	total := time.Since(start)
	for _, err := range errs {
		t.Error(err)
	}
	n := recordedMCPRuns(t, d.engine)
	fmt.Printf("BENCH 50 MCP sessions x 20 one-shot runs: %d errors, %d of 1000 recorded, total %v, per run p50 %v p99 %v (concurrency %d)\n",
		len(errs), n, total.Round(time.Millisecond), quantile(lat, 0.5).Round(time.Millisecond), quantile(lat, 0.99).Round(time.Millisecond), d.engine.Settings().Concurrency)
	if n != 1000 {
		t.Fatalf("%d runs recorded, want 1000", n)
	}
}
