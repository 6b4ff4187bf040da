package escapetest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// Start starts one run of a backend: spec as the backend's tests make it
// (workspace, user, command), to which the caller adds the sandbox, the
// run id and the limits.
type Start func(ctx context.Context, argv []string, edit func(*backends.Spec)) (backends.Process, error)

// HoldAcrossRuns checks a backend against a sandbox's limits: they bound
// what its concurrent runs hold together (pids, private memory), not
// each run.
func HoldAcrossRuns(t *testing.T, start Start) {
	cases := []struct {
		name string
		runs int
		lim  backends.Limits
		argv []string
		// measure sums what the runs hold together.
		measure func(pids []int) int
		max     int
	}{
		// Each run wants sh and 6 sleeps: 12 runs would be 84 and more.
		{"pids", 12, backends.Limits{Pids: 24},
			[]string{"sh", "-c", "for i in 1 2 3 4 5 6; do sleep 30 & done; wait"},
			func(pids []int) int { return len(pids) }, 24},
		// Each run holds 40 MiB written: 6 runs would be 240 MiB and more.
		{"memory", 6, backends.Limits{MemoryMB: 96},
			[]string{Python, "-c", "import time\nx = b'x' * (40 << 20)\ntime.sleep(30)"},
			sumRSSMiB, 96},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sandboxID := "limits-" + limits.RandomID()
			// Started one after another, to run together: a start is
			// briefly more than its run (the Landlock helper's Go threads
			// count in pids), and twelve at once could all find the budget
			// full under load, which left nothing to measure.
			var procs []backends.Process
			for i := 0; i < tc.runs; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				p, err := start(ctx, tc.argv, func(s *backends.Spec) {
					s.SandboxID = sandboxID
					s.RunID = fmt.Sprintf("%s-%d", s.RunID, i)
					s.Limits = tc.lim
				})
				cancel()
				if err != nil {
					continue // a run the sandbox's budget left no room for
				}
				procs = append(procs, p)
			}
			t.Cleanup(func() {
				for _, p := range procs {
					_ = p.Kill()
					_, _ = p.Wait()
				}
			})
			// Let every run fork and allocate what it can, then take the
			// largest total seen over a while. The runs are read one after
			// the other, not at one instant: a process that ends in one
			// run while another run forks would count twice, so a total
			// counts when two reads in a row see it (the sleeps and the
			// memory last 30 s; a real breach is there in both).
			total := func() int {
				var pids []int
				for _, p := range procs {
					pids = append(pids, p.Pids()...)
				}
				return tc.measure(pids)
			}
			most := 0
			for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				most = max(most, min(total(), total()))
			}
			if most > tc.max {
				t.Errorf("the sandbox's %d runs held %d together, over the sandbox's limit of %d", tc.runs, most, tc.max)
			}
			if most == 0 {
				t.Errorf("nothing ran")
			}
		})
	}
}

// sumRSSMiB adds up the private resident memory of pids, in MiB (shared
// libraries, counted in each process's VmRSS, are left out).
func sumRSSMiB(pids []int) int {
	kb := 0
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
				n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				kb += n
			}
		}
	}
	return kb >> 10
}
