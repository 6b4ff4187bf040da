package app

import (
	"errors"
	"sort"
	"time"
)

// BackgroundRuns lists the background runs going on now, the oldest
// first.
func (e *Engine) BackgroundRuns() ([]RunRecord, error) {
	out := []RunRecord{}
	for _, lr := range e.live.all() {
		if lr.logFile == "" {
			continue
		}
		rec, err := e.Run(lr.id)
		if err != nil {
			var nf *NotFoundError
			if errors.As(err, &nf) {
				continue // it ended while we looked
			}
			return nil, err
		}
		if rec.State == "running" {
			out = append(out, *rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

// KillRun kills one live run of any sandbox and waits (up to 10 s) until
// it has ended. It returns false when the run was not going (any more).
func (e *Engine) KillRun(id string) (bool, error) {
	if _, err := e.Run(id); err != nil {
		return false, err
	}
	for _, lr := range e.live.all() {
		if lr.id == id {
			lr.kill("killed by the owner (senclaw kill " + id + ")")
			select {
			case <-lr.done:
			case <-time.After(10 * time.Second):
			}
			return true, nil
		}
	}
	return false, nil
}
