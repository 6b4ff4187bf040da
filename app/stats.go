package app

import (
	"context"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/backends/landlock"
	"github.com/senclaw/sandbox/monitor"
)

// roots gives the monitor the host pid of every live run, per sandbox:
// the tree below each is the sandbox's.
func (e *Engine) roots() map[string][]int {
	e.live.mu.Lock()
	defer e.live.mu.Unlock()
	out := make(map[string][]int, len(e.live.bySandbox))
	for id, runs := range e.live.bySandbox {
		for _, r := range runs {
			out[id] = append(out[id], r.proc.Pid())
		}
	}
	return out
}

// machinery reports whether a process is ours rather than the sandbox's
// (the bwrap launcher and its reaper, the Landlock helper, a tracer).
func machinery(cmd string) bool {
	first, rest, _ := strings.Cut(cmd, " ")
	switch path.Base(first) {
	case "bwrap", "strace", "senclaw-netfwd", "/run/senclaw-netfwd":
		return true
	}
	// The Landlock helper that supervises a run without a cgroup.
	return rest == landlock.HelperCommand
}

// Stats returns the sandbox's processes with CPU and memory, sampled by
// the monitor, with up to the last five minutes of history.
func (e *Engine) Stats(ctx context.Context, id string) (*Stats, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	st, err := e.stats(ctx, sb)
	if st != nil {
		st.Denied, st.RecentDenied = e.proxy.Denials(id)
	}
	return st, err
}

// stats samples sb's processes (Stats adds the network denials).
func (e *Engine) stats(ctx context.Context, sb *Sandbox) (*Stats, error) {
	id := sb.ID
	if in, ok := e.backendOf(sb).(docker.Inspector); ok {
		return e.containerStats(ctx, sb, in)
	}
	e.freshSnapshot(id) // a fresh sandbox need not wait for the next tick
	return e.hostStats(sb), nil
}

// hostStats is sb's processes as the engine's sampler last saw them.
func (e *Engine) hostStats(sb *Sandbox) *Stats {
	id := sb.ID
	snap := e.sampler.Snapshot(id)
	st := &Stats{SandboxID: id, Source: "host", Running: e.live.count(id) > 0, MemoryLimitMB: sb.MemoryMB, Processes: []ProcessInfo{}, History: []StatsPoint{}}
	if !snap.SampledAt.IsZero() {
		st.SampledAtMs = snap.SampledAt.UnixMilli()
	}
	if st.Running {
		for _, p := range snap.Processes {
			if machinery(p.Command) {
				continue
			}
			st.Processes = append(st.Processes, ProcessInfo{
				Pid: p.Pid, PPid: p.PPid, Pgid: p.Pgid, Command: p.Command,
				CPUPercent: round1(p.CPUPercent), RSSMB: mb(p.RSSBytes), RSSBytes: p.RSSBytes, ElapsedSec: p.Elapsed.Seconds(),
			})
		}
		// The totals and the history leave out the same machinery
		// (monitor.Options.Overhead).
		st.CPUPercent, st.RSSMB = round1(snap.CPUPercent), mb(snap.RSSBytes)
	}
	for _, h := range e.sampler.History(id) {
		st.History = append(st.History, StatsPoint{AtMs: h.At.UnixMilli(), CPUPercent: round1(h.CPUPercent), RSSMB: mb(h.RSSBytes)})
	}
	return st
}

// freshSnapshot is the sampler's snapshot of sandbox id, sampled again
// when a run started after the last sample: a background server asked
// about at once need not wait for the next tick. A run that started in
// the last second is given a few looks to show its processes (its
// command may still be on its way through bwrap and the forwarder).
func (e *Engine) freshSnapshot(id string) monitor.Snapshot {
	runs := e.live.runs(id)
	if len(runs) == 0 {
		return e.sampler.Snapshot(id)
	}
	latest := time.Time{}
	for _, r := range runs {
		if r.started.After(latest) {
			latest = r.started
		}
	}
	snap := e.sampler.Snapshot(id)
	for try := 0; try < 6; try++ {
		stale := snap.SampledAt.IsZero() || e.now().Sub(snap.SampledAt) > 2*e.sampleInterval() || snap.SampledAt.Before(latest.Add(100*time.Millisecond))
		young := time.Since(latest) < time.Second && !slices.ContainsFunc(snap.Processes, func(p monitor.Proc) bool { return !machinery(p.Command) })
		if !stale && !young {
			break
		}
		if try > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		_ = e.sampler.SampleOnce()
		snap = e.sampler.Snapshot(id)
	}
	return snap
}

// Kill kills one process of the sandbox (only one that belongs to it), or
// every process when pid is 0.
func (e *Engine) Kill(ctx context.Context, id string, pid int) (int, error) {
	if _, err := e.Get(id); err != nil {
		return 0, err
	}
	if pid < 0 {
		return 0, badField("pid", pid, "is not a process id")
	}
	if pid == 0 {
		return e.Stop(ctx, id)
	}
	sb, _ := e.Get(id)
	if in, ok := e.backendOf(sb).(docker.Inspector); ok {
		if err := in.KillProcesses(ctx, id, []int{pid}); err != nil {
			return 0, badField("pid", pid, "%v", err)
		}
		return 1, nil
	}
	if err := e.sampler.Kill(id, pid); err != nil {
		return 0, badField("pid", pid, "%v", err)
	}
	return 1, nil
}

// containerStats asks a container backend for the sandbox's stats and
// processes.
func (e *Engine) containerStats(ctx context.Context, sb *Sandbox, in docker.Inspector) (*Stats, error) {
	st := &Stats{SandboxID: sb.ID, Source: "container", Engine: sb.Engine, MemoryLimitMB: sb.MemoryMB, Processes: []ProcessInfo{}, History: []StatsPoint{}}
	if why := e.engineUnreachable(sb); why != "" {
		st.Note = "engine " + sb.Engine + " is unreachable: " + why
		return st, nil
	}
	cs, err := in.ContainerStats(ctx, sb.ID)
	if err != nil {
		st.Note = "the container could not be sampled: " + err.Error()
		return st, nil
	}
	st.Running = true
	st.CPUPercent, st.RSSMB, st.SampledAtMs = round1(cs.CPUPercent), mb(cs.MemoryBytes), cs.SampledAt.UnixMilli()
	if cs.MemoryLimit > 0 {
		st.MemoryLimitMB = int(cs.MemoryLimit >> 20)
	}
	procs, err := in.ContainerTop(ctx, sb.ID)
	if err != nil {
		st.Note = "the container's processes could not be listed: " + err.Error()
	}
	for _, p := range procs {
		st.Processes = append(st.Processes, ProcessInfo{Pid: p.PID, Command: p.Command})
	}
	return st, nil
}

func (e *Engine) sampleInterval() time.Duration {
	if e.opts.SampleInterval > 0 {
		return e.opts.SampleInterval
	}
	return monitor.DefaultInterval
}

// Start starts the engine's background work (process sampling) until ctx
// ends or the engine is closed.
func (e *Engine) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	e.stopBackground = cancel
	go e.sampler.Run(ctx)
	e.startBackends(ctx)
}

func mb(b uint64) float64      { return round1(float64(b) / (1 << 20)) }
func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
