package monitor

// processTable indexes one scan for tree walks in both directions.
type processTable struct {
	byPid    map[int]ProcRef
	children map[int][]int
}

// newProcessTable indexes refs by pid and by parent.
func newProcessTable(refs []ProcRef) processTable {
	t := processTable{
		byPid:    make(map[int]ProcRef, len(refs)),
		children: make(map[int][]int, len(refs)),
	}
	for _, r := range refs {
		t.byPid[r.Pid] = r
		if r.PPid != r.Pid {
			t.children[r.PPid] = append(t.children[r.PPid], r.Pid)
		}
	}
	return t
}

// usableRoot reports whether pid may root a sandbox tree. Pid 0 and pid 1
// would claim (almost) every process on the host; a caller that passes one
// has a bug, and the monitor fails closed by ignoring it rather than letting
// Owns approve killing arbitrary processes.
func usableRoot(pid int) bool {
	return pid > 1
}

// descendants returns the roots that exist and every process below them,
// each pid once, parents before children.
func (t processTable) descendants(roots []int) []int {
	seen := make(map[int]bool)
	var out []int
	queue := make([]int, 0, len(roots))
	for _, r := range roots {
		if _, ok := t.byPid[r]; ok && usableRoot(r) && !seen[r] {
			seen[r] = true
			queue = append(queue, r)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		for _, c := range t.children[pid] {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return out
}

// inTree reports whether pid is one of roots or below one of them, walking
// parents upward. The walk is bounded by the table size so that a parent
// cycle (possible on Windows, where parent pids go stale) cannot hang it.
func (t processTable) inTree(roots []int, pid int) bool {
	rootSet := make(map[int]bool, len(roots))
	for _, r := range roots {
		if usableRoot(r) {
			rootSet[r] = true
		}
	}
	if len(rootSet) == 0 {
		return false
	}
	cur := pid
	for range len(t.byPid) + 1 {
		ref, ok := t.byPid[cur]
		if !ok {
			return false
		}
		if rootSet[cur] {
			return true
		}
		if ref.PPid == cur || ref.PPid <= 0 {
			return false
		}
		cur = ref.PPid
	}
	return false
}
