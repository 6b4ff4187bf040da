package app

// A full disk: below MinFreeDiskMB of free space on the data
// dir's filesystem new runs are refused with the reason, and recorded;
// what is stored stays readable. A run that started goes on (its disk
// quota bounds what it writes).

// DefaultMinFreeDiskMB is the default of the setting minFreeDiskMb.
const DefaultMinFreeDiskMB = 256

// MaxMinFreeDiskMB bounds the setting: 1 TiB.
const MaxMinFreeDiskMB = 1 << 20

// roomOnDisk refuses a new run while the data dir's filesystem has less
// than MinFreeDiskMB free. A filesystem that cannot be asked does not
// stop runs: the store's own writes fail if it is really full.
func (e *Engine) roomOnDisk() error {
	want := e.Settings().MinFreeDiskMB
	if want <= 0 {
		return nil
	}
	free, err := DiskFree(e.opts.DataDir)
	if err != nil || free >= uint64(want)<<20 {
		return nil
	}
	return refused("the data dir's filesystem (%s) has %d MiB free, less than minFreeDiskMb %d: new runs could not keep their records and output; free some space (senclaw doctor lists what the engine left behind; senclaw rm --purge removes sandboxes' files), or lower minFreeDiskMb in the settings", e.opts.DataDir, free>>20, want)
}
