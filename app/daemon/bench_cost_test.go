package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestBenchEngineCost measures what the engine itself spends on each
// `senclaw run -- true`: the daemon (engine, API, store) runs in this
// process, the CLI as a process of its own as people start it, and the
// heap allocated (runtime.MemStats) and the CPU this process used
// (getrusage) over the runs are divided by their number, less what the
// same loop costs when each CLI only prints its version (starting a
// process from here). SENCLAW_ALLOC_PROFILE=FILE writes the allocation
// profile, every allocation sampled, after the runs to FILE and before
// them to FILE.base (go tool pprof -sample_index alloc_space
// -diff_base FILE.base -top FILE: the runs' own). `make bench` runs it; it is skipped otherwise.
func TestBenchEngineCost(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	testutil.RequireBwrap(t)
	profile := os.Getenv("SENCLAW_ALLOC_PROFILE")
	if profile != "" {
		runtime.MemProfileRate = 1
		defer func() { runtime.MemProfileRate = 512 * 1024 }()
	}
	bin := testutil.Senclaw(t)
	data := cliEnv(t)
	h := cli.Host{DataDir: data, LookupEnv: os.LookupEnv, Logger: slog.New(slog.DiscardHandler), Stdout: io.Discard, Stderr: os.Stderr, CLI: bin}
	d, code := newDaemon(h, Options{}, false)
	if d == nil {
		t.Fatalf("the daemon did not start (exit %d)", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); d.Wait(); d.Close() })
	// The CLI writes to a file, which it is handed as is: no pipe, no
	// copying in this process.
	out, err := os.CreateTemp("", "senclaw-cost-out-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close(); os.Remove(out.Name()) })
	call := func(args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil {
			b, _ := os.ReadFile(out.Name())
			t.Fatalf("senclaw %v: %v\n%s", args, err, b)
		}
	}
	for i := 0; i < 10; i++ { // warm: the made-ahead stock, the store's pages
		call("run", "--", "true")
	}
	const n = 100
	writeProfile := func(name string) {
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		runtime.GC() // the profile is as of the last GC
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	loop := func(args ...string) (bytes, mallocs uint64, cpu time.Duration) {
		// Let the made-ahead stock refill after the last run, so that a
		// loop pays its own refills only.
		time.Sleep(2 * time.Second)
		runtime.GC()
		var before, after runtime.MemStats
		var ub, ua syscall.Rusage
		runtime.ReadMemStats(&before)
		syscall.Getrusage(syscall.RUSAGE_SELF, &ub)
		for i := 0; i < n; i++ {
			call(args...)
		}
		time.Sleep(2 * time.Second) // the refills of the last runs
		syscall.Getrusage(syscall.RUSAGE_SELF, &ua)
		runtime.ReadMemStats(&after)
		tv := func(r syscall.Rusage) time.Duration {
			return time.Duration(r.Utime.Nano() + r.Stime.Nano())
		}
		return after.TotalAlloc - before.TotalAlloc, after.Mallocs - before.Mallocs, tv(ua) - tv(ub)
	}
	cb, cm, cc := loop("--version")
	if profile != "" {
		writeProfile(profile + ".base")
	}
	rb, rm, rc := loop("run", "--", "true")
	if profile != "" {
		writeProfile(profile)
	}
	per := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / n }
	fmt.Printf("BENCH engine cost per senclaw run -- true (daemon in-process, %d runs, less %d runs of senclaw --version): %.1f KB and %.0f allocations, %.2f ms of the daemon's CPU\n",
		n, n, per(rb, cb)/1024, per(rm, cm), float64(rc-cc)/float64(time.Millisecond)/n)
}
