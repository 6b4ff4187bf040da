package app

import (
	"encoding/json"
	"errors"

	"github.com/senclaw/sandbox/app/store"
)

// Runs returns up to limit run records, newest first; only sandboxID's when
// it is given.
func (e *Engine) Runs(sandboxID string, limit int) ([]RunRecord, error) {
	out := []RunRecord{}
	var decodeErr error
	err := e.store.ListRuns(sandboxID, limit, func(data []byte) bool {
		var r RunRecord
		if err := json.Unmarshal(data, &r); err != nil {
			decodeErr = err
			return false
		}
		out = append(out, r)
		return true
	})
	if err == nil {
		err = decodeErr
	}
	return out, err
}

// Run returns one run record.
func (e *Engine) Run(id string) (*RunRecord, error) {
	var r RunRecord
	if err := e.store.GetRun(id, &r); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, &NotFoundError{Kind: "run", ID: id}
		}
		return nil, err
	}
	return &r, nil
}
