package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/docker"
)

// leftoverAge is how long after a run's end what it left counts as left:
// a backend removes a run's cgroups just after its end is told.
const leftoverAge = 30 * time.Second

// strayLister is a backend whose containers can be left (Docker).
type strayLister interface {
	Strays(ctx context.Context, known func(sandboxID string) bool) ([]docker.Stray, error)
	RemoveStray(ctx context.Context, s docker.Stray) error
}

// Leftovers lists what the engine left that no sandbox and no run going
// owns, and with remove removes what is removable, saying for each
// whether it went.
func (e *Engine) Leftovers(ctx context.Context, remove bool) ([]Leftover, error) {
	e.records.flush()
	live := e.aheadSandboxes() // made ahead, or being removed after their run
	for _, lr := range e.live.all() {
		live[lr.id], live[lr.sandboxID] = true, true
	}
	ended := map[string]string{} // run id -> sandbox id
	since, settled := e.now().Add(-reapWindow), e.now().Add(-leftoverAge)
	err := e.store.ListRuns("", 0, func(data []byte) bool {
		var r RunRecord
		if json.Unmarshal(data, &r) != nil {
			return true
		}
		if r.State == "running" || live[r.ID] {
			live[r.SandboxID] = true // starting, or going
			return true
		}
		end := r.StartedAt.Add(time.Duration(r.DurationMs) * time.Millisecond)
		switch {
		case end.After(settled):
			live[r.SandboxID] = true // its clean-up may be going on now
		case r.StartedAt.After(since):
			ended[placeOf(&r)] = r.SandboxID
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	var out []Leftover
	add := func(l Leftover, rm func() error) {
		if remove && l.Removable && rm != nil {
			if err := rm(); err != nil {
				l.Error = err.Error()
			} else {
				l.Removed = true
			}
		}
		out = append(out, l)
	}
	for pid, run := range e.orphans(ended) {
		add(Leftover{Kind: "process", What: strconv.Itoa(pid), Owner: run, Removable: true}, func() error {
			p, err := os.FindProcess(pid)
			if err == nil {
				err = p.Kill()
			}
			return err
		})
	}
	e.eachRunPlace(ended, func(rr runReaper, id, sb string) {
		for _, dir := range rr.RunCgroups(sb, id) {
			add(Leftover{Kind: "cgroup", What: dir, Owner: id, Removable: true}, func() error {
				_, err := rr.ReapRun(sb, id)
				return err
			})
		}
	})
	known := map[string]bool{}
	_ = e.store.EachSandbox(func(data []byte) error {
		var s struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &s) == nil {
			known[s.ID] = true
		}
		return nil
	})
	for _, b := range e.opts.Backends {
		sl, ok := b.(strayLister)
		if !ok || !e.probes.probe(ctx, b, false).Usable() {
			continue
		}
		strays, err := sl.Strays(ctx, func(id string) bool { return known[id] || live[id] })
		if err != nil {
			add(Leftover{Kind: "container", What: "(could not be listed)", Error: err.Error()}, nil)
			continue
		}
		for _, s := range strays {
			add(Leftover{Kind: "container", What: s.Name, Owner: s.SandboxID, Removable: true}, func() error { return sl.RemoveStray(ctx, s) })
		}
	}
	entries, _ := os.ReadDir(e.workspacesDir())
	for _, ent := range entries {
		id := ent.Name()
		if !ent.IsDir() || known[id] || live[id] {
			continue
		}
		sb := &Sandbox{ID: id, Kind: "oneshot", OwnWorkspace: true, Workspace: filepath.Join(e.workspacesDir(), id)}
		if !e.wasOneShot(id) {
			add(Leftover{Kind: "files", What: sb.Workspace, Owner: id}, nil)
			continue
		}
		add(Leftover{Kind: "workspace", What: sb.Workspace, Owner: id, Removable: true}, func() error { return e.purgeLeftWorkspace(sb) })
	}
	return out, nil
}

// orphans asks the backends that can for the processes runs left waiting
// (pid -> run id).
func (e *Engine) orphans(runs map[string]string) map[int]string {
	ids := make(map[string]bool, len(runs))
	for id := range runs {
		ids[id] = true
	}
	out := map[int]string{}
	for _, b := range e.opts.Backends {
		if r, ok := b.(orphanFinder); ok {
			for pid, run := range r.Orphans(ids) {
				out[pid] = run
			}
		}
	}
	return out
}

// orphanFinder is a backend that can find the processes of an earlier
// engine's runs that no parent waits for (bwrap).
type orphanFinder interface {
	Orphans(runs map[string]bool) map[int]string
}

// wasOneShot reports whether the runs of sandbox id say it was a one-shot
// run's.
func (e *Engine) wasOneShot(id string) bool {
	oneShot := false
	_ = e.store.ListRuns(id, 1, func(data []byte) bool {
		var r RunRecord
		oneShot = json.Unmarshal(data, &r) == nil && r.Kind == "oneshot" && r.SandboxID == id
		return false
	})
	return oneShot
}

// purgeLeftWorkspace removes a one-shot workspace a run left, with what
// is mounted on it (a tmpfs, a pool's bind).
func (e *Engine) purgeLeftWorkspace(sb *Sandbox) error {
	_ = diskquota.Unmount(sb.Workspace)
	_, err := e.purgeWorkspace(sb)
	return err
}

// CheckStore runs bbolt's consistency check on the open store and returns
// what it found (nothing when the file is whole).
func (e *Engine) CheckStore() []string { return e.store.Check() }
