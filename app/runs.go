package app

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/senclaw/sandbox/app/store"
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
// says.
const killedByCrash = "the engine stopped while the run was going; its processes ended with it"

// reconcileRuns closes the records of runs that were still running when
// the engine last stopped: every run is on disk as running before it
// starts anything (run), so a crash leaves these. Their processes died
// with the engine (sandboxes die with their parent), or are found and
// killed; then the cgroups of every run of the last hour are removed if
// they are still there (a crash can come after a run's end was recorded
// and before its cgroups went; older ones the backends' sweeps remove).
// One-shot workspaces go in purgeOneShots, after reconcileDisks.
// Containers are the Docker backend's to reconcile (startBackends).
func (e *Engine) reconcileRuns() error {
	var stale []RunRecord
	recent := map[string]string{} // run id -> sandbox id
	since := e.now().Add(-reapWindow)
	err := e.store.ListRuns("", 0, func(data []byte) bool {
		var r RunRecord
		if json.Unmarshal(data, &r) != nil {
			return true
		}
		if r.State == "running" {
			stale = append(stale, r)
		}
		if r.State == "running" || r.StartedAt.After(since) {
			recent[placeOf(&r)] = r.SandboxID
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, r := range stale {
		r.State = "done"
		r.Killed = killedByCrash
		if r.Isolation == "" {
			r.Isolation = "unknown: the engine stopped before the run started"
		}
		if err := e.store.PutRun(r.ID, r.SandboxID, r); err != nil {
			return err
		}
		e.log.Info("A run left from an earlier engine was closed.", "run", r.ID, "sandbox", r.SandboxID)
	}
	e.reapRuns(recent)
	return nil
}

// reapWindow is how far back reconcileRuns looks for what runs left:
// longer than any foreground run may last (10 minutes).
const reapWindow = time.Hour

// runReaper is a backend that can find and remove what a run of a dead
// engine left (its cgroups), knowing the run's id.
type runReaper interface {
	RunCgroups(sandboxID, runID string) []string
	ReapRun(sandboxID, runID string) (bool, error)
}

// reapRuns kills what the runs left waiting, then removes their cgroups.
func (e *Engine) reapRuns(runs map[string]string) {
	for pid, run := range e.orphans(runs) {
		if p, err := os.FindProcess(pid); err == nil && p.Kill() == nil {
			e.log.Info("A process an earlier engine's run left waiting was killed.", "pid", pid, "run", run)
		}
	}
	e.eachRunPlace(runs, func(rr runReaper, runID, sandboxID string) {
		if found, err := rr.ReapRun(sandboxID, runID); found {
			e.log.Info("The cgroups an earlier engine's run left were removed.", "run", runID, "err", err)
		}
	})
}

// eachRunPlace calls fn for each backend that can reap runs and each
// place of each run's cgroups: a run of a one-shot sandbox has its
// cgroups right under senclaw/ or under its throwaway sandbox's, so both
// are tried (runs: run id -> sandbox id).
func (e *Engine) eachRunPlace(runs map[string]string, fn func(rr runReaper, runID, sandboxID string)) {
	for _, b := range e.opts.Backends {
		rr, ok := b.(runReaper)
		if !ok {
			continue
		}
		for id, sandboxID := range runs {
			for _, sb := range []string{sandboxID, ""} {
				fn(rr, id, sb)
			}
		}
	}
}

// purgeOneShots removes the workspaces one-shot runs left: a crash can
// come before or after a one-shot's end is recorded, and before its
// workspace went. A directory under workspaces/ that no sandbox owns and
// whose runs say it was a one-shot's is one; any other (a deleted
// sandbox's files kept on purpose) stays.
func (e *Engine) purgeOneShots() {
	entries, _ := os.ReadDir(e.workspacesDir())
	for _, ent := range entries {
		id := ent.Name()
		if !ent.IsDir() || e.store.GetSandbox(id, &struct{}{}) == nil || !e.wasOneShot(id) {
			continue
		}
		sb := &Sandbox{ID: id, Kind: "oneshot", OwnWorkspace: true, Workspace: filepath.Join(e.workspacesDir(), id)}
		if err := e.purgeLeftWorkspace(sb); err != nil {
			e.log.Warn("The workspace of a one-shot run an earlier engine left could not be removed.", "sandbox", id, "err", err)
		}
	}
}
