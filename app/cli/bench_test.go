package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/benchtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestBenchCLI measures `senclaw run -- true` as people run it, a whole
// CLI process against a real daemon, next to raw bwrap started as a whole
// process with the binds and namespaces of a strict sandbox, in turns in
// one run: the ratio of the medians is what the targets name
// (whole process at most 2.0x raw bwrap, through the socket at most
// 1.3x). `senclaw ls` shows what a CLI process and one request cost
// alone; a run in a persistent sandbox is the other path people take. `make bench` runs it; it is skipped otherwise.
func TestBenchCLI(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	d := benchtest.Start(t)
	ctx := context.Background()
	socket := func() error {
		res, err := d.Client.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Argv: []string{"true"}}}, nil)
		if err == nil && !res.OK {
			err = fmt.Errorf("run failed: %+v", res.Run)
		}
		return err
	}
	// A project with a policy file of its own, for the --here case: the
	// files are read and merged on each of its runs.
	project := testutil.SandboxDir(t, "senclaw-bench-here-")
	os.Chmod(project, 0o777)
	if err := os.MkdirAll(filepath.Join(project, ".senclaw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".senclaw", "policy.json"), []byte(`{"fsMode": "strict", "limits": {"pids": 128}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	here := func() error {
		res, err := d.Client.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Argv: []string{"true"}}, Sandbox: apitype.SandboxConfig{ProjectDir: &project}}, nil)
		if err == nil && !res.OK {
			err = fmt.Errorf("run failed: %+v", res.Run)
		}
		return err
	}
	cases := []struct {
		name string
		f    func() error
		took []time.Duration
	}{
		{name: "raw bwrap", f: d.RawBwrap},
		{name: "senclaw run -- true", f: func() error { return d.CLI("run", "--", "true") }},
		{name: "one-shot through the socket", f: socket},
		{name: "senclaw ls", f: func() error { return d.CLI("ls") }},
		{name: "senclaw run --sandbox -- true", f: func() error { return d.CLI("run", "--sandbox", "bench", "--", "true") }},
		{name: "--here through the socket", f: here},
	}
	if err := d.CLI("create", "--name", "bench"); err != nil {
		t.Fatalf("creating the persistent sandbox: %v", err)
	}
	const warmup, runs = 5, 60
	for i := 0; i < warmup+runs; i++ {
		for j := range cases {
			c := &cases[j]
			start := time.Now()
			if err := c.f(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if i >= warmup {
				c.took = append(c.took, time.Since(start))
			}
		}
	}
	raw := benchtest.Median(cases[0].took)
	for _, c := range cases {
		fmt.Printf("BENCH cli %-28s median %7.2f ms  %.2fx raw bwrap\n", c.name, benchtest.MS(benchtest.Median(c.took)), float64(benchtest.Median(c.took))/float64(raw))
	}
	fmt.Printf("BENCH cli whole process: senclaw run %.2fx raw bwrap (target <= 2.0x); through the socket %.2fx (target <= 1.3x)\n",
		float64(benchtest.Median(cases[1].took))/float64(raw), float64(benchtest.Median(cases[2].took))/float64(raw))
	fmt.Printf("BENCH cli %s\n", aheadShare(t, d, 3*(warmup+runs)))
	fmt.Printf("BENCH cli %s\n", readyShare(t, d, 3*(warmup+runs)))

	// Back to back, with nothing between: a run may come before the
	// sandbox the last one used is made again, and then starts as usual.
	var b2b []time.Duration
	for i := 0; i < runs; i++ {
		start := time.Now()
		if err := d.CLI("run", "--", "true"); err != nil {
			t.Fatal(err)
		}
		b2b = append(b2b, time.Since(start))
	}
	fmt.Printf("BENCH cli senclaw run -- true, %d back to back: median %.2f ms = %.2fx raw bwrap; %s\n",
		runs, benchtest.MS(benchtest.Median(b2b)), float64(benchtest.Median(b2b))/float64(raw), aheadShare(t, d, runs))
	// The same in the persistent sandbox: its ready start is made again
	// once a run is over, and a run that comes while it is being made
	// waits for it.
	b2b = b2b[:0]
	for i := 0; i < runs; i++ {
		start := time.Now()
		if err := d.CLI("run", "--sandbox", "bench", "--", "true"); err != nil {
			t.Fatal(err)
		}
		b2b = append(b2b, time.Since(start))
	}
	fmt.Printf("BENCH cli senclaw run --sandbox -- true, %d back to back: median %.2f ms = %.2fx raw bwrap; %s\n",
		runs, benchtest.MS(benchtest.Median(b2b)), float64(benchtest.Median(b2b))/float64(raw), readyShare(t, d, runs))
	// And with none kept ready (readyIdleMinutes 0), as before, paired
	// with raw bwrap.
	if _, err := d.Client.SetSettings(ctx, map[string]any{"readyIdleMinutes": 0}); err != nil {
		t.Fatal(err)
	}
	var off, raw2 []time.Duration
	for i := 0; i < runs; i++ {
		start := time.Now()
		if err := d.RawBwrap(); err != nil {
			t.Fatal(err)
		}
		raw2 = append(raw2, time.Since(start))
		start = time.Now()
		if err := d.CLI("run", "--sandbox", "bench", "--", "true"); err != nil {
			t.Fatal(err)
		}
		off = append(off, time.Since(start))
	}
	fmt.Printf("BENCH cli senclaw run --sandbox -- true with readyIdleMinutes 0: median %.2f ms = %.2fx raw bwrap (%.2f ms)\n",
		benchtest.MS(benchtest.Median(off)), float64(benchtest.Median(off))/float64(benchtest.Median(raw2)), benchtest.MS(benchtest.Median(raw2)))
}

// readyShare says how many of the last n runs in persistent sandboxes
// took the sandbox's ready start.
func readyShare(t *testing.T, d *benchtest.Daemon, n int) string {
	runs, err := d.Client.Runs(context.Background(), "", n)
	if err != nil {
		t.Fatal(err)
	}
	ready, all := 0, 0
	for _, r := range runs {
		if r.Kind == "exec" {
			all++
			if r.AheadID != "" {
				ready++
			}
		}
	}
	return fmt.Sprintf("%d of the last %d runs in a persistent sandbox took its ready start", ready, all)
}

// aheadShare says how many of the last n one-shot runs took a sandbox
// made ahead.
func aheadShare(t *testing.T, d *benchtest.Daemon, n int) string {
	runs, err := d.Client.Runs(context.Background(), "", n)
	if err != nil {
		t.Fatal(err)
	}
	ahead, oneShots := 0, 0
	for _, r := range runs {
		if r.Kind == "oneshot" {
			oneShots++
			if r.AheadID != "" {
				ahead++
			}
		}
	}
	return fmt.Sprintf("%d of the last %d one-shots ran in a sandbox made ahead", ahead, oneShots)
}
