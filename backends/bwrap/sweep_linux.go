package bwrap

import "time"

// Sweep removes the empty run cgroups a previous engine left behind when
// it died before cleaning up, and returns how many went (see
// limits.Layout.Sweep: runs going on are never touched).
func (b *Backend) Sweep() int {
	n := b.host.cgroups().Sweep(time.Now())
	if n > 0 {
		b.log.Info("Empty run cgroups left by an earlier engine were removed.", "count", n)
	}
	return n
}

// ReapRun kills and removes the cgroups a run of a dead engine left (the
// engine knows the run from its record).
func (b *Backend) ReapRun(sandboxID, runID string) (bool, error) {
	return b.host.cgroups().Reap(sandboxID, runID)
}

// RunCgroups lists the cgroups of a run that are there (senclaw doctor
// shows those of runs that ended).
func (b *Backend) RunCgroups(sandboxID, runID string) []string {
	return b.host.cgroups().LeftoverDirs(sandboxID, runID)
}
