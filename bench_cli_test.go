package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/client"
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
	d := startBenchDaemon(t)
	ctx := context.Background()
	socket := func() error {
		res, err := d.client.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Argv: []string{"true"}}}, nil)
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
		{name: "raw bwrap", f: d.rawBwrap},
		{name: "senclaw run -- true", f: func() error { return d.cli("run", "--", "true") }},
		{name: "one-shot through the socket", f: socket},
		{name: "senclaw ls", f: func() error { return d.cli("ls") }},
		{name: "senclaw run --sandbox -- true", f: func() error { return d.cli("run", "--sandbox", "bench", "--", "true") }},
	}
	if err := d.cli("create", "--name", "bench"); err != nil {
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
	raw := medianOf(cases[0].took)
	for _, c := range cases {
		fmt.Printf("BENCH cli %-28s median %7.2f ms  %.2fx raw bwrap\n", c.name, ms(medianOf(c.took)), float64(medianOf(c.took))/float64(raw))
	}
	fmt.Printf("BENCH cli whole process: senclaw run %.2fx raw bwrap (target <= 2.0x); through the socket %.2fx (target <= 1.3x)\n",
		float64(medianOf(cases[1].took))/float64(raw), float64(medianOf(cases[2].took))/float64(raw))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
