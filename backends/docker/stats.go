package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
)

// Inspector is implemented by backends that can report on and act on a
// persistent sandbox's processes as a whole (its container). The engine
// uses it for the sandbox's stats, process list and kill verbs.
type Inspector interface {
	// ContainerStats is one sample of the sandbox's CPU and memory use.
	ContainerStats(ctx context.Context, sandboxID string) (Stats, error)
	// ContainerTop lists the sandbox's processes.
	ContainerTop(ctx context.Context, sandboxID string) ([]Proc, error)
	// KillProcesses kills the given pids (as ContainerTop reports them),
	// or, with none given, every process but the container's own.
	KillProcesses(ctx context.Context, sandboxID string, pids []int) error
}

// Warmer is implemented by backends with a one-shot pool. The engine may
// call Warm at start for its default one-shot settings so that even the
// first one-shot run is warm.
type Warmer interface {
	Warm(ctx context.Context, spec *backends.Spec) error
}

// Stats is one sample of a container's resource use.
type Stats struct {
	// CPUPercent is of one CPU (200 means two CPUs busy).
	CPUPercent    float64   `json:"cpuPercent"`
	MemoryBytes   uint64    `json:"memoryBytes"`
	MemoryLimit   uint64    `json:"memoryLimit"`
	Pids          uint64    `json:"pids"`
	SampledAt     time.Time `json:"sampledAt"`
	ContainerName string    `json:"container"`
}

// Proc is one process of a sandbox as the daemon lists it.
type Proc struct {
	// PID is the daemon's pid (this machine's when the daemon runs here).
	PID     int    `json:"pid"`
	User    string `json:"user"`
	Command string `json:"command"`
}

// ContainerStats reads one sample (stream=false: the daemon includes the
// previous CPU reading, so the CPU share is over about a second).
func (b *Backend) ContainerStats(ctx context.Context, sandboxID string) (Stats, error) {
	cli, err := b.clientFor(sandboxID)
	if err != nil {
		return Stats{}, err
	}
	sctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	res, err := cli.ContainerStats(sctx, containerName(sandboxID), client.ContainerStatsOptions{IncludePreviousSample: true})
	if err != nil {
		return Stats{}, b.daemonErr("reading the sandbox's stats", err)
	}
	defer res.Body.Close()
	var v container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		return Stats{}, b.daemonErr("reading the sandbox's stats", err)
	}
	s := Stats{MemoryBytes: v.MemoryStats.Usage, MemoryLimit: v.MemoryStats.Limit, Pids: v.PidsStats.Current, SampledAt: v.Read, ContainerName: strings.TrimPrefix(v.Name, "/")}
	// Page cache is not the sandbox's own memory; docker's CLI leaves it
	// out the same way (cgroup v1 total_inactive_file, v2 inactive_file).
	for _, k := range []string{"total_inactive_file", "inactive_file"} {
		if c, ok := v.MemoryStats.Stats[k]; ok && c < s.MemoryBytes {
			s.MemoryBytes -= c
			break
		}
	}
	cpu := float64(v.CPUStats.CPUUsage.TotalUsage) - float64(v.PreCPUStats.CPUUsage.TotalUsage)
	sys := float64(v.CPUStats.SystemUsage) - float64(v.PreCPUStats.SystemUsage)
	cpus := float64(v.CPUStats.OnlineCPUs)
	if cpus == 0 {
		cpus = float64(len(v.CPUStats.CPUUsage.PercpuUsage))
	}
	if cpu > 0 && sys > 0 {
		s.CPUPercent = cpu / sys * cpus * 100
	}
	return s, nil
}

// ContainerTop lists the sandbox's processes with the top API.
func (b *Backend) ContainerTop(ctx context.Context, sandboxID string) ([]Proc, error) {
	cli, err := b.clientFor(sandboxID)
	if err != nil {
		return nil, err
	}
	tctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	top, err := cli.ContainerTop(tctx, containerName(sandboxID), client.ContainerTopOptions{})
	if err != nil {
		return nil, b.daemonErr("listing the sandbox's processes", err)
	}
	col := map[string]int{}
	for i, t := range top.Titles {
		col[t] = i
	}
	pidCol, ok := col["PID"]
	if !ok {
		return nil, fmt.Errorf("the daemon's process list has no PID column (columns: %s)", strings.Join(top.Titles, ", "))
	}
	var procs []Proc
	for _, row := range top.Processes {
		pid, _ := strconv.Atoi(row[pidCol])
		p := Proc{PID: pid}
		if i, ok := col["UID"]; ok && i < len(row) {
			p.User = row[i]
		}
		if i, ok := col["CMD"]; ok && i < len(row) {
			p.Command = row[i]
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// KillProcesses kills pids of the sandbox, or all its processes but the
// container's init and keeper when pids is empty. With a daemon elsewhere
// (pids not ours) killing all restarts the container, and single pids
// cannot be killed.
func (b *Backend) KillProcesses(ctx context.Context, sandboxID string, pids []int) error {
	cli, err := b.clientFor(sandboxID)
	if err != nil {
		return err
	}
	ins, err := inspectContainer(ctx, cli, containerName(sandboxID))
	if err != nil {
		return b.daemonErr("inspecting the sandbox's container", err)
	}
	if !ins.Running {
		return nil
	}
	local := !b.opts.inContainerKill && sharesHostPids(ins.Pid, ins.ID)
	if len(pids) == 0 {
		if !local {
			rctx, cancel := callCtx(ctx, callTimeout)
			defer cancel()
			_, err := cli.ContainerRestart(rctx, ins.ID, restartNow)
			return b.daemonErr("restarting the sandbox's container to kill its processes", err)
		}
		pids = runPids(ins.Pid, ins.ID)
	} else if !local {
		return fmt.Errorf("killing single processes needs the docker daemon on this machine; kill them all instead (the container restarts)")
	}
	for _, pid := range pids {
		if err := signalHostPid(pid, ins.ID); err != nil {
			return fmt.Errorf("killing pid %d of sandbox %s: %w", pid, sandboxID, err)
		}
	}
	return nil
}
