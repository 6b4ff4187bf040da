package monitor

import (
	"context"
	"fmt"
	"slices"

	"github.com/shirou/gopsutil/v4/process"
)

// Leftovers finds what remains on this machine of a process tree that an
// earlier engine started and could not end (it was killed itself): every
// process running as uid whose environment holds marker (KEY=VALUE,
// unique per launch and given to the tree's root, so its descendants
// inherit it). Nothing else is ever returned, so a caller that kills the
// result kills only what it started; the uid check keeps out a setuid
// program the tree started, which the tree itself could not signal.
// Environments are read with gopsutil; processes the engine may not read
// are never matched.
func Leftovers(ctx context.Context, lister Lister, marker string, uid int) ([]int, error) {
	if marker == "" {
		return nil, nil
	}
	if lister == nil {
		lister = NewHostLister()
	}
	refs, err := lister.Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var out []int
	for _, r := range refs {
		p := &process.Process{Pid: int32(r.Pid)}
		env, err := p.EnvironWithContext(ctx)
		if err != nil || !slices.Contains(env, marker) {
			continue
		}
		if uids, err := p.UidsWithContext(ctx); err != nil || len(uids) == 0 || int(uids[0]) != uid {
			continue
		}
		out = append(out, r.Pid)
	}
	return out, nil
}
