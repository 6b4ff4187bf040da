package app

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/senclaw/sandbox/monitor"
)

// idleWatch fires when a background run has been idle for its idle TTL:
// its processes used no CPU and its log did not grow. It looks every
// tenth of the TTL (at least every second, at most every minute), so its
// cost does not depend on how busy the run is.
type idleWatch struct {
	fired chan string
	quit  chan struct{}
}

func (w *idleWatch) stop() { close(w.quit) }

// watchIdle starts watching lr for ttl of idleness.
func (e *Engine) watchIdle(lr *liveRun, ttl time.Duration) *idleWatch {
	w := &idleWatch{fired: make(chan string, 1), quit: make(chan struct{})}
	lister := e.opts.ProcessLister
	if lister == nil {
		lister = monitor.NewHostLister()
	}
	every := min(max(ttl/10, time.Second), time.Minute)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		lastCPU, lastLog := -1.0, int64(-1)
		idleSince := time.Now()
		for {
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
			cpu := runCPU(lister, lr.proc.Pids())
			var size int64
			if lr.logFile != "" {
				if fi, err := os.Stat(lr.logFile); err == nil {
					size = fi.Size()
				}
			}
			if math.Abs(cpu-lastCPU) > 0.01 || size != lastLog {
				lastCPU, lastLog, idleSince = cpu, size, time.Now()
				continue
			}
			if time.Since(idleSince) >= ttl {
				w.fired <- fmt.Sprintf("idle for %s (its idle TTL): no CPU used and no output written", ttl.Round(time.Second))
				return
			}
		}
	}()
	return w
}

// runCPU is the CPU time, in seconds, the processes pids have used.
func runCPU(l monitor.Lister, pids []int) float64 {
	if len(pids) == 0 {
		return 0
	}
	refs := make([]monitor.ProcRef, len(pids))
	for i, p := range pids {
		refs[i] = monitor.ProcRef{Pid: p}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	infos, err := l.Details(ctx, refs)
	if err != nil {
		return 0
	}
	var sum float64
	for _, in := range infos {
		sum += in.CPUSeconds
	}
	return sum
}
