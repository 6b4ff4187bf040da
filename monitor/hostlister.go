package monitor

import (
	"context"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// HostLister is the Lister for the machine the engine runs on. Scan is
// platform code that reads only pids and parents (on Linux one small read of
// /proc/<pid>/stat per process, on Windows one toolhelp snapshot); Details
// uses gopsutil for the few processes inside sandboxes.
type HostLister struct {
	scanState
}

var _ Lister = (*HostLister)(nil)

// NewHostLister returns a Lister for the host's processes.
func NewHostLister() *HostLister {
	return &HostLister{}
}

// Scan returns every host process with its parent.
func (h *HostLister) Scan(ctx context.Context) ([]ProcRef, error) {
	return h.scan(ctx)
}

// Details reads command line, CPU time and resident memory of refs through
// gopsutil. Processes that exited since the scan are left out.
func (h *HostLister) Details(ctx context.Context, refs []ProcRef) ([]ProcInfo, error) {
	out := make([]ProcInfo, 0, len(refs))
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, ok := details(ctx, ref)
		if ok {
			out = append(out, info)
		}
	}
	return out, nil
}

// details reads one process. It builds the gopsutil Process by hand instead
// of with NewProcess, which would spend extra system calls checking that the
// pid exists; the first read below finds that out anyway.
func details(ctx context.Context, ref ProcRef) (ProcInfo, bool) {
	p := &process.Process{Pid: int32(ref.Pid)}
	times, err := p.TimesWithContext(ctx)
	if err != nil {
		// Gone since the scan, or not ours to read.
		return ProcInfo{}, false
	}
	info := ProcInfo{ProcRef: ref, CPUSeconds: times.User + times.System}
	if mem, err := p.MemoryInfoWithContext(ctx); err == nil {
		info.RSSBytes = mem.RSS
	}
	if argv, err := p.CmdlineSliceWithContext(ctx); err == nil {
		info.Command = commandLine(argv)
	}
	if info.Command == "" {
		if name, err := p.NameWithContext(ctx); err == nil && name != "" {
			info.Command = "[" + name + "]"
		}
	}
	if info.CreateTime.IsZero() {
		if ms, err := p.CreateTimeWithContext(ctx); err == nil {
			info.CreateTime = time.UnixMilli(ms)
		}
	}
	if info.Pgid == 0 {
		info.Pgid = processGroup(ref.Pid)
	}
	return info, true
}
