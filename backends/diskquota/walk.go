package diskquota

import (
	"io/fs"
	"path/filepath"
)

// walkUsage is the space (allocated blocks) and the number of files
// under dir. It does not follow links.
func walkUsage(dir string) (bytes, files int64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files++
		bytes += allocatedBytes(info)
		return nil
	})
	return bytes, files
}

// Usage is the space (allocated blocks) and the number of files under
// dir now, as the watchdog counts them, for a write that must fit in
// what is left of a quota.
func Usage(dir string) (bytes, files int64) { return walkUsage(dir) }
