package landlock

import "time"

// Sweep removes the empty run cgroups a previous engine left behind (see
// limits.Layout.Sweep: runs going on are never touched). bwrap's Sweep
// sweeps the same tree; an engine without bwrap still needs this one.
func (b *Backend) Sweep() int {
	n := b.host.cgroups().Sweep(time.Now())
	if n > 0 {
		b.log.Info("Empty run cgroups left by an earlier engine were removed.", "count", n)
	}
	return n
}

// ReapRun kills and removes the cgroups a run of a dead engine left (see
// bwrap's: the same tree).
func (b *Backend) ReapRun(sandboxID, runID string) (bool, error) {
	return b.host.cgroups().Reap(sandboxID, runID)
}

// RunCgroups lists the cgroups of a run that are there (see bwrap's).
func (b *Backend) RunCgroups(sandboxID, runID string) []string {
	return b.host.cgroups().LeftoverDirs(sandboxID, runID)
}
