package monitor

import (
	"slices"
	"time"
)

// Proc is one process of a sandbox as of a sample.
type Proc struct {
	// Pid is the host process id.
	Pid int `json:"pid"`
	// PPid is the parent's host process id.
	PPid int `json:"ppid"`
	// Pgid is the process group id (0 on Windows).
	Pgid int `json:"pgid"`
	// Command is the command line, cut to MaxCommandBytes.
	Command string `json:"command"`
	// CPUPercent is CPU use since the previous sample; 100 is one core.
	// It is 0 the first time a process is seen unless it started after
	// the previous sample.
	CPUPercent float64 `json:"cpu_percent"`
	// CPUSeconds is user plus system CPU time since the process started.
	CPUSeconds float64 `json:"cpu_seconds"`
	// RSSBytes is the resident set size.
	RSSBytes uint64 `json:"rss_bytes"`
	// Started is when the process started (zero if unknown).
	Started time.Time `json:"started"`
	// Elapsed is the time from Started to the sample.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Snapshot is a sandbox's processes and totals as of its latest sample.
type Snapshot struct {
	// SandboxID is the sandbox the snapshot is for.
	SandboxID string `json:"sandbox_id"`
	// SampledAt is when the sample was taken; zero if never.
	SampledAt time.Time `json:"sampled_at"`
	// Processes are the sandbox's processes in tree order: roots first,
	// parents before children.
	Processes []Proc `json:"processes"`
	// CPUPercent is the sum of the processes' CPU use; 100 is one core.
	CPUPercent float64 `json:"cpu_percent"`
	// RSSBytes is the sum of the processes' resident memory. Pages shared
	// between processes count once per process, so this overstates.
	RSSBytes uint64 `json:"rss_bytes"`
	// Count is len(Processes).
	Count int `json:"count"`
}

// sandboxState is what the Sampler keeps per sandbox.
type sandboxState struct {
	snap Snapshot
	hist ring
}

// Snapshot returns the latest sample of a sandbox. An unknown sandbox gets
// an empty Snapshot with only SandboxID set.
func (s *Sampler) Snapshot(sandboxID string) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sandboxes[sandboxID]
	if st == nil {
		return Snapshot{SandboxID: sandboxID}
	}
	snap := st.snap
	snap.Processes = slices.Clone(snap.Processes)
	return snap
}

// History returns a sandbox's samples, oldest first, at most Options.History
// of them; nil for an unknown sandbox.
func (s *Sampler) History(sandboxID string) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sandboxes[sandboxID]
	if st == nil {
		return nil
	}
	return st.hist.samples()
}

// Forget drops everything kept about a sandbox. If Roots still names it,
// the next sample starts a new history.
func (s *Sampler) Forget(sandboxID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sandboxes, sandboxID)
}

// buildSnapshot assembles a sandbox's snapshot from the measured processes,
// skipping pids whose details could not be read; overhead (when not nil)
// names the processes left out of the totals.
func buildSnapshot(id string, at time.Time, pids []int, procs map[int]Proc, overhead func(Proc) bool) Snapshot {
	snap := Snapshot{SandboxID: id, SampledAt: at, Processes: make([]Proc, 0, len(pids))}
	for _, pid := range pids {
		p, ok := procs[pid]
		if !ok {
			continue
		}
		snap.Processes = append(snap.Processes, p)
		if overhead != nil && overhead(p) {
			continue
		}
		snap.CPUPercent += p.CPUPercent
		snap.RSSBytes += p.RSSBytes
	}
	snap.Count = len(snap.Processes)
	return snap
}
