package direct

import "slices"

// tree is how a direct run's processes are found and killed.
type tree interface {
	// started is called once the process runs.
	started(pid int)
	// kill kills every process of the run except those in keep.
	kill(keep ...int) error
	// pids lists the run's processes.
	pids() []int
	// release undoes what was made for the run (its cgroup).
	release()
	// held says in words how the run's processes are ended.
	held() string
}

// groupTree is the last resort: the run's process group.
type groupTree struct{ pgid int }

func (g *groupTree) started(pid int) { g.pgid = pid }
func (g *groupTree) kill(keep ...int) error {
	if len(keep) == 0 {
		return killGroup(g.pgid)
	}
	for _, pid := range groupPids(g.pgid) {
		if !slices.Contains(keep, pid) {
			_ = killPid(pid)
		}
	}
	return nil
}
func (g *groupTree) pids() []int { return groupPids(g.pgid) }
func (g *groupTree) release()    {}
func (g *groupTree) held() string {
	return "processes: the run's process group only (no cgroup could be made and no subreaper was given): a process that leaves it (setsid) outlives the run"
}
