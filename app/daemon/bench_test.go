package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/benchtest"
)

// TestBenchDaemon measures, in one run, through a real daemon's socket:
// a one-shot `true` against raw bwrap, 200 concurrent one-shot runs against
// 200 raw bwraps in parallel, and the daemon's idle RSS with 100 sandboxes
// stored. `make bench` runs it; it is skipped otherwise.
func TestBenchDaemon(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	d := benchtest.Start(t)
	c, ctx, raw := d.Client, context.Background(), d.RawBwrap
	// 200 runs at once are more than the default concurrency here.
	if _, err := c.SetSettings(ctx, map[string]any{"concurrency": 400}); err != nil {
		t.Fatal(err)
	}
	oneShot := func() error {
		res, err := c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Argv: []string{"true"}}}, nil)
		if err == nil && !res.OK {
			err = fmt.Errorf("run failed: %+v", res.Run)
		}
		return err
	}
	var tRaw, tOne []time.Duration
	for i := 0; i < 45; i++ {
		for _, m := range []struct {
			f   func() error
			out *[]time.Duration
		}{{raw, &tRaw}, {oneShot, &tOne}} {
			start := time.Now()
			if err := m.f(); err != nil {
				t.Fatal(err)
			}
			if i >= 5 {
				*m.out = append(*m.out, time.Since(start))
			}
		}
	}
	mr, mo := benchtest.Median(tRaw), benchtest.Median(tOne)
	fmt.Printf("BENCH daemon one-shot true: raw bwrap %v, through the socket %v, ratio %.2fx (target <= 1.5x)\n", mr, mo, float64(mo)/float64(mr))

	parallel := func(n int, f func() error) time.Duration {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := time.Now()
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- f() }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	dRaw := parallel(200, raw)
	dOne := parallel(200, oneShot)
	fmt.Printf("BENCH 200 concurrent: raw bwrap %.0f runs/s, daemon %.0f runs/s, %.0f%% (target >= 60%%)\n", 200/dRaw.Seconds(), 200/dOne.Seconds(), 100*dRaw.Seconds()/dOne.Seconds())

	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("idle-%d", i)
		if _, err := c.Create(ctx, app.SandboxConfig{Name: &name}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	fmt.Printf("BENCH daemon idle RSS with 100 sandboxes: %.1f MiB (target <= 40 MiB)\n", rssMiB(d.Cmd.Process.Pid))
}

func rssMiB(pid int) float64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return -1
}

// TestBenchDockerOneShot measures, in one run and the same image, a
// one-shot `true` through the path users take (the senclaw CLI, the
// daemon, the engine, the Docker backend with its warm pool), as whole
// processes, against `docker run --rm` of the same image, alternating
// the two. `make bench` runs it; it is skipped otherwise.
func TestBenchDockerOneShot(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	requireDockerCLI(t)
	const image = "senclaw-test/busybox:latest"
	d := buildDaemon(t)
	d.start()
	defer func() { d.cli("stop"); d.stopped() }()
	timed := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Env = d.env
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
		}
		return time.Since(start)
	}
	ours := []string{"--data-dir", d.data, "run", "--backend", "docker", "--image", image, "--", "true"}
	var tOurs, tRaw []time.Duration
	full := 0
	const n = 20
	for i := 0; i < n+2; i++ {
		warm := len(d.containers("pool")) >= 2 // untimed
		a := timed(d.bin, ours...)
		b := timed("docker", "run", "--rm", image, "true")
		if i >= 2 { // the first run fills the pool
			tOurs, tRaw = append(tOurs, a), append(tRaw, b)
			if warm {
				full++
			}
		}
	}
	mo, mr := benchtest.Median(tOurs), benchtest.Median(tRaw)
	fmt.Printf("BENCH docker one-shot true: senclaw run --backend docker (CLI, daemon, engine, warm pool) %v, docker run --rm %v, ratio %.2fx (pool full before %d of %d runs)\n", mo.Round(time.Millisecond), mr.Round(time.Millisecond), float64(mo)/float64(mr), full, n)
}
