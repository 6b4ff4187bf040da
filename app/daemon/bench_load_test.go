package daemon

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/benchtest"
)

// TestBenchQueuedRuns: 1,000 one-shot runs sent at once
// through the daemon's socket wait in its queue and run at the settings'
// concurrency (default: 4 per core); the total time against 1,000 raw
// bwraps at the same concurrency in the same run, every run recorded, and
// the daemon's peak RSS (VmHWM). `make bench` runs it.
func TestBenchQueuedRuns(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	const n = 1000
	d := benchtest.Start(t)
	ctx := context.Background()
	var s app.Settings
	if err := d.Client.Do(ctx, "GET", "/settings", nil, nil, &s); err != nil {
		t.Fatal(err)
	}
	concurrency := s.Concurrency
	rssBefore := daemonKB(t, d.Cmd.Process.Pid, "VmRSS")

	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := d.Client.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Argv: []string{"true"}}}, nil)
			if err != nil || !rep.OK {
				if failed.Add(1) == 1 {
					t.Errorf("a queued run: %v %+v", err, rep)
				}
			}
		}()
	}
	wg.Wait()
	queued := time.Since(start)

	start = time.Now()
	work := make(chan struct{})
	var rawWG sync.WaitGroup
	for w := 0; w < concurrency; w++ {
		rawWG.Add(1)
		go func() {
			defer rawWG.Done()
			for range work {
				if err := d.RawBwrap(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- struct{}{}
	}
	close(work)
	rawWG.Wait()
	raw := time.Since(start)

	var page struct {
		Total int `json:"total"`
	}
	if err := d.Client.Do(ctx, "GET", "/runs?limit=1", nil, nil, &page); err != nil {
		t.Fatal(err)
	}
	peak := daemonKB(t, d.Cmd.Process.Pid, "VmHWM")
	fmt.Printf("BENCH 1000 one-shot runs queued at once (concurrency %d, queueLength %d): %v, raw bwrap at the same concurrency %v, ratio %.2fx; %d failed, %d recorded; daemon RSS %d MiB before, peak %d MiB\n",
		concurrency, s.QueueLength, queued.Round(time.Millisecond), raw.Round(time.Millisecond), float64(queued)/float64(raw), failed.Load(), page.Total, rssBefore>>10, peak>>10)
	if page.Total != n || failed.Load() != 0 {
		t.Fatalf("%d recorded, %d failed", page.Total, failed.Load())
	}
}

// daemonKB reads a field (VmRSS, VmHWM) of /proc/PID/status, in KiB.
func daemonKB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}
