//go:build !linux && !windows

package monitor

import (
	"context"
	"fmt"

	"github.com/shirou/gopsutil/v4/process"
)

// scanState is empty here: a scan needs nothing kept between calls.
type scanState struct{}

// scan lists pids and parents through gopsutil (one sysctl per process on
// macOS and the BSDs), leaving create time and group to Details.
func (h *HostLister) scan(ctx context.Context) ([]ProcRef, error) {
	pids, err := process.PidsWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing pids: %w", err)
	}
	refs := make([]ProcRef, 0, len(pids))
	for _, pid := range pids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := &process.Process{Pid: pid}
		ppid, err := p.PpidWithContext(ctx)
		if err != nil {
			continue // exited since the pid list was read
		}
		refs = append(refs, ProcRef{Pid: int(pid), PPid: int(ppid)})
	}
	return refs, nil
}
