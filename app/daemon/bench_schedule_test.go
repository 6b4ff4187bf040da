package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/scheduler"
	"github.com/senclaw/sandbox/internal/benchtest"
)

// TestBenchSchedules measures, through a real daemon (`senclaw serve`
// with the Scheduler scripts switch on, so firings run in bwrap): the
// daemon's idle CPU with no schedule and with 1,000 stored (target: under
// 0.5% of one core), and how late firings start against the time they
// were due (target: median within 50 ms): when the scheduler started the
// firing, when the runner started the run, and when the script's first
// command ran inside its sandbox, next to raw bwrap's own start-up time
// measured in the same run. `make bench` runs it.
func TestBenchSchedules(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	bwrapPath, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	d := benchtest.Start(t)
	daemon, c := d.Cmd, d.Client
	ctx := context.Background()
	pol, _ := c.Policy(ctx)
	pol.SchedulerScript = true
	if _, err := c.SetPolicy(ctx, *pol); err != nil {
		t.Fatal(err)
	}

	const window = 20 * time.Second
	time.Sleep(2 * time.Second)
	idle0 := cpuShare(t, daemon.Process.Pid, window)
	// 1,000 schedules spread over the year's minutes, none due during
	// the measurement (never in this month).
	this := int(time.Now().Month())
	for i := 0; i < 1000; i++ {
		month := 1 + (this+i%11)%12
		spec := scheduler.Spec{Name: new(fmt.Sprintf("bench-%04d", i)), Cron: new(fmt.Sprintf("%d %d %d %d *", i%60, (i/60)%24, 1+i%28, month)), Code: new("true")}
		if _, err := c.CreateSchedule(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	idle1000 := cpuShare(t, daemon.Process.Pid, window)
	fmt.Printf("BENCH scheduler idle CPU of the daemon: no schedules %.3f%%, 1,000 schedules %.3f%% of one core (target < 0.5%%)\n", idle0, idle1000)

	// Ten schedules every 10 s, a second apart: a firing a second for 30 s.
	var ids []string
	for i := 0; i < 10; i++ {
		v, err := c.CreateSchedule(ctx, scheduler.Spec{Name: new(fmt.Sprintf("tick-%d", i)), Cron: new("@every 10s"), Code: new("date +%s%N")})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.Schedule.ID)
		time.Sleep(time.Second)
	}
	time.Sleep(32 * time.Second)
	for _, id := range ids {
		if _, err := c.PauseSchedule(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	var sched, runner, script []time.Duration
	for _, id := range ids {
		h, err := c.ScheduleHistory(ctx, id, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range h {
			if f.Outcome != scheduler.OutcomeOK || f.Trigger != scheduler.TriggerSchedule {
				t.Fatalf("firing %+v", f)
			}
			run, err := c.Run(ctx, f.RunID)
			if err != nil {
				t.Fatal(err)
			}
			ns, _ := strconv.ParseInt(strings.TrimSpace(run.Stdout), 10, 64)
			sched = append(sched, f.StartedAt.Sub(f.At))
			runner = append(runner, run.StartedAt.Sub(f.At))
			script = append(script, time.Unix(0, ns).Sub(f.At))
		}
	}
	raw := make([]time.Duration, 0, 15)
	for i := 0; i < 15; i++ {
		start := time.Now()
		cmd := exec.Command(bwrapPath, "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--", "/usr/bin/true")
		cmd.Env = []string{"PATH=/usr/bin"}
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, time.Since(start))
	}
	fmt.Printf("BENCH scheduler firing lateness, median of %d firings: scheduler started it %v, runner started the run %v (target <= 50ms), script's first command %v; raw bwrap true start-to-exit %v\n",
		len(runner), benchtest.Median(sched), benchtest.Median(runner), benchtest.Median(script), benchtest.Median(raw))
	if len(runner) < 20 {
		t.Fatalf("only %d firings in 30 s, want about 30", len(runner))
	}
}

// cpuShare is the percentage of one core the process used during d.
func cpuShare(t *testing.T, pid int, d time.Duration) float64 {
	t.Helper()
	ticks := func() int64 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// utime and stime are fields 14 and 15; the command (field 2) is
		// in parentheses and may hold spaces.
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		return u + s
	}
	start, t0 := ticks(), time.Now()
	time.Sleep(d)
	used := time.Duration(ticks()-start) * (time.Second / 100) // USER_HZ is 100 on Linux
	return 100 * used.Seconds() / time.Since(t0).Seconds()
}
