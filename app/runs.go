package app

import (
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends/diskquota"
)

// Run returns one run record.
func (e *Engine) Run(id string) (*RunRecord, error) {
	e.records.flush()
	var r RunRecord
	if err := e.store.GetRun(id, &r); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, &NotFoundError{Kind: "run", ID: id}
		}
		return nil, err
	}
	return &r, nil
}

// killedByCrash is what the record of a run an engine's death cut short
// says (issue #15).
const killedByCrash = "the engine stopped while the run was going; its processes ended with it"

// reconcileRuns closes the records of runs that were still running when
// the engine last stopped: every run is on disk as running before it
// starts anything (run), so a crash leaves these. Their processes died
// with the engine (sandboxes die with their parent); what is left of them
// is removed: the run's cgroups (with anything still in them) and a
// one-shot run's workspace (after reconcileDisks unmounted its tmpfs).
// Containers are the Docker backend's to reconcile (startBackends).
func (e *Engine) reconcileRuns() (oneShots []Sandbox, err error) {
	var stale []RunRecord
	err = e.store.ListRuns("", 0, func(data []byte) bool {
		var r RunRecord
		if json.Unmarshal(data, &r) == nil && r.State == "running" {
			stale = append(stale, r)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for _, r := range stale {
		r.State = "done"
		r.Killed = killedByCrash
		if r.Isolation == "" {
			r.Isolation = "unknown: the engine stopped before the run started"
		}
		if err := e.store.PutRun(r.ID, r.SandboxID, r); err != nil {
			return nil, err
		}
		e.reapRun(r)
		if r.Kind == "oneshot" {
			oneShots = append(oneShots, Sandbox{ID: r.SandboxID, Kind: "oneshot", OwnWorkspace: true, Workspace: filepath.Join(e.workspacesDir(), r.SandboxID)})
		}
		e.log.Info("A run left from an earlier engine was closed.", "run", r.ID, "sandbox", r.SandboxID)
	}
	return oneShots, nil
}

// runReaper is a backend that can remove what a run of a dead engine left
// (its cgroups), knowing the run's id.
type runReaper interface {
	ReapRun(sandboxID, runID string) (bool, error)
}

// reapRun asks every backend that can to remove what run r left. A run of
// a one-shot sandbox has its cgroups right under senclaw/ or under its
// throwaway sandbox's: both are tried.
func (e *Engine) reapRun(r RunRecord) {
	for _, b := range e.opts.Backends {
		rr, ok := b.(runReaper)
		if !ok {
			continue
		}
		for _, sb := range []string{r.SandboxID, ""} {
			if found, err := rr.ReapRun(sb, r.ID); found {
				e.log.Info("The cgroups an earlier engine's run left were removed.", "run", r.ID, "backend", b.Name(), "err", err)
			}
		}
	}
}

// purgeOneShots removes the workspaces of one-shot runs a crash cut
// short.
func (e *Engine) purgeOneShots(list []Sandbox) {
	for i := range list {
		sb := &list[i]
		_ = diskquota.Unmount(sb.Workspace) // a tmpfs the watchdog-only path left
		if _, err := e.purgeWorkspace(sb); err != nil {
			e.log.Warn("The workspace of a one-shot run an earlier engine left could not be removed.", "sandbox", sb.ID, "err", err)
		}
	}
}
