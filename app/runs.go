package app

import (
	"encoding/json"
	"errors"

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

// reconcileRuns closes the records of background runs that were still
// running when the engine last stopped: their processes died with it
// (sandboxes die with their parent), so nothing is left to wait for.
func (e *Engine) reconcileRuns() error {
	var stale []RunRecord
	err := e.store.ListRuns("", 0, func(data []byte) bool {
		var r RunRecord
		if json.Unmarshal(data, &r) == nil && r.State == "running" {
			stale = append(stale, r)
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, r := range stale {
		r.State = "done"
		r.Killed = "the engine stopped while the run was going; its processes ended with it"
		if err := e.store.PutRun(r.ID, r.SandboxID, r); err != nil {
			return err
		}
		e.log.Info("A run left from an earlier engine was closed.", "run", r.ID, "sandbox", r.SandboxID)
	}
	return nil
}
