package app

import (
	"io/fs"
	"path/filepath"
	"time"
)

// quotaWatch stops a run whose workspace outgrows its disk quota. The
// backend's per-file limit (RLIMIT_FSIZE) stops one big file; this catches
// many small ones.
type quotaWatch struct {
	over chan struct{}
	quit chan struct{}
}

// quotaInterval is how often the workspace is measured.
const quotaInterval = time.Second

func newQuotaWatch(dir string, limitMB int) *quotaWatch {
	q := &quotaWatch{over: make(chan struct{}), quit: make(chan struct{})}
	if limitMB <= 0 {
		return q
	}
	limit := int64(limitMB) << 20
	go func() {
		t := time.NewTicker(quotaInterval)
		defer t.Stop()
		for {
			select {
			case <-q.quit:
				return
			case <-t.C:
				if diskUsage(dir) > limit {
					close(q.over)
					return
				}
			}
		}
	}()
	return q
}

func (q *quotaWatch) exceeded() <-chan struct{} { return q.over }
func (q *quotaWatch) stop()                     { close(q.quit) }

// diskUsage is the space the files under dir take (allocated blocks, so a
// sparse file counts for what it really uses). It does not follow links.
func diskUsage(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		total += allocatedBytes(info)
		return nil
	})
	return total
}
