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
