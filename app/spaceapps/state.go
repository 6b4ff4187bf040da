package spaceapps

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/monitor"
)

// App states: apitype's.
const (
	StateStopped      = apitype.AppStateStopped
	StateStarting     = apitype.AppStateStarting
	StateRunning      = apitype.AppStateRunning
	StateStopping     = apitype.AppStateStopping
	StateBackoff      = apitype.AppStateBackoff
	StateCrashLooping = apitype.AppStateCrashLooping
	StateExited       = apitype.AppStateExited
	StateFailed       = apitype.AppStateFailed
	StatePortTaken    = apitype.AppStatePortTaken
	StateOutside      = apitype.AppStateOutside
)

// Health statuses.
const (
	HealthUnknown = "unknown"
	HealthOK      = "ok"
	HealthFailing = "failing"
)

// appState is one app: its stored record and what runs now.
type appState struct {
	id string
	// op serialises lifecycle operations (start, stop, restart,
	// register, remove, sandbox changes) on the app.
	op sync.Mutex

	mu  sync.Mutex
	rec *record
	log *appLog

	state string
	// text says the state in words ("port taken by PID 42 (python3
	// -m http.server)", "restarting in 4 s").
	text string
	sup  *supervision
	run  *app.Launched
	// startedAt is when the running launch started; healthySince when it
	// first answered.
	startedAt, healthySince time.Time
	health                  health
	// failures are the failed starts within GiveUpWindow.
	failures    []time.Time
	nextAttempt time.Time
	// lastLog is the log's end when it gave up or failed.
	lastLog []string
	// holder is who holds the app's port (port-taken, outside).
	holder *monitor.Holder
	// token is the running launch's own API token (daemonApi).
	token string
	// env is the running launch's environment as shown (secrets masked).
	env map[string]string
}

// supervision is the loop that keeps one app running. cancel ends it
// with the reason its running launch's record gives (stopCause).
type supervision struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	// settled is closed once the first launch's outcome, first, is known:
	// a person's start that finds the app starting already (autostart's
	// launch) waits for it as for a launch of its own.
	settled chan struct{}
	first   outcome
}

// stopCause is why a supervision ended: a record's killed says
// "restarted by a person", not "stopped", so that a restart does not read
// as a failure or a stop.
type stopCause string

func (c stopCause) Error() string { return string(c) }

// Why a supervision ends.
const (
	stoppedByPerson   stopCause = "stopped by a person"
	restartedByPerson stopCause = "restarted by a person"
	stoppedOnRemove   stopCause = "stopped: the app was removed"
	stoppedWithEngine stopCause = "stopped with the engine"
)

// stopReason is why ctx, a supervision's, ended: "stopped" when it says
// nothing more.
func stopReason(ctx context.Context) string {
	var c stopCause
	if errors.As(context.Cause(ctx), &c) {
		return string(c)
	}
	return "stopped"
}

// health is what the probes said.
type health struct {
	status     string
	code       int
	latencyMs  int64
	lastError  string
	checkedAt  time.Time
	history    []HealthPoint
	consecFail int
}

func (h *health) record(at time.Time, code int, latency time.Duration, err error) {
	p := HealthPoint{AtMs: at.UnixMilli(), Status: code, LatencyMs: latency.Milliseconds()}
	h.checkedAt, h.code, h.latencyMs = at, code, p.LatencyMs
	if err == nil {
		p.OK = true
		h.status, h.lastError, h.consecFail = HealthOK, "", 0
	} else {
		p.Error = err.Error()
		h.status, h.lastError = HealthFailing, err.Error()
		h.consecFail++
	}
	h.history = append(h.history, p)
	if len(h.history) > healthKept {
		h.history = h.history[len(h.history)-healthKept:]
	}
}

// setState changes the state. a.mu is held.
func (a *appState) setState(state, text string) {
	a.state, a.text = state, text
}

// running reports whether a launch of the app runs now. a.mu is held.
func (a *appState) running() bool {
	switch a.state {
	case StateStarting, StateRunning, StateStopping:
		return a.run != nil
	}
	return false
}
