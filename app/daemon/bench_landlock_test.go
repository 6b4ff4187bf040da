package daemon

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/benchtest"
)

// TestBenchLandlock measures, in one run, a one-shot `true` through the
// CLI and the daemon (the path people take) under the Landlock backend,
// against the same through the engine's bwrap backend and against raw
// bwrap with the binds of a strict sandbox. Target: Landlock no slower
// than the engine's bwrap. `make bench` runs it; it is skipped otherwise.
func TestBenchLandlock(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	d := benchtest.Start(t)
	ways := []struct {
		name string
		run  func() error
		took []time.Duration
	}{
		{name: "raw bwrap", run: d.RawBwrap},
		{name: "senclaw run --backend bwrap", run: func() error { return d.CLI("run", "--backend", "bwrap", "--", "true") }},
		{name: "senclaw run --backend landlock", run: func() error { return d.CLI("run", "--backend", "landlock", "--", "true") }},
	}
	for i := 0; i < 45; i++ {
		for j := range ways {
			start := time.Now()
			if err := ways[j].run(); err != nil {
				t.Fatalf("%s: %v", ways[j].name, err)
			}
			if i >= 5 {
				ways[j].took = append(ways[j].took, time.Since(start))
			}
		}
	}
	raw, bw, ll := benchtest.Median(ways[0].took), benchtest.Median(ways[1].took), benchtest.Median(ways[2].took)
	fmt.Printf("BENCH one-shot true through the CLI and daemon: raw bwrap %v, engine bwrap %v (%.2fx raw), engine landlock %v (%.2fx raw, %.2fx engine bwrap; target <= 1.0x engine bwrap)\n",
		raw, bw, float64(bw)/float64(raw), ll, float64(ll)/float64(raw), float64(ll)/float64(bw))
}
