package spaceapps

import (
	"sync"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/monitor"
)

// App states.
const (
	// StateStopped: not running (never started, stopped by a person or
	// with the engine).
	StateStopped = "stopped"
	// StateStarting: launched, waiting for the first 2xx from its health
	// path.
	StateStarting = "starting"
	// StateRunning: healthy once; probed every ProbeEvery since (the
	// health says whether the last probe answered).
	StateRunning = "running"
	// StateStopping: SIGTERM sent, waiting for the tree to end.
	StateStopping = "stopping"
	// StateBackoff: it ended and is restarted after a delay.
	StateBackoff = "backoff"
	// StateCrashLooping: it failed GiveUpStarts times within GiveUpWindow
	// and is no longer restarted; a manual start resets it.
	StateCrashLooping = "crash-looping"
	// StateExited: it ended and its restart policy does not restart it.
	StateExited = "exited"
	// StateFailed: it could not be started (a requirement is missing, the
	// launch was refused, or it did not become healthy and is not
	// restarted).
	StateFailed = "failed"
	// StatePortTaken: its port is held by a process the engine did not
	// start; that process is left alone.
	StatePortTaken = "port-taken"
	// StateOutside: its port is held by a process running from the app's
	// own directory: the app runs outside the engine.
	StateOutside = "outside"
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

// supervision is the loop that keeps one app running.
type supervision struct {
	cancel func()
	done   chan struct{}
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

// HealthPoint is one health probe.
type HealthPoint struct {
	AtMs      int64  `json:"atMs"`
	OK        bool   `json:"ok"`
	Status    int    `json:"status,omitempty"`
	LatencyMs int64  `json:"latencyMs"`
	Error     string `json:"error,omitempty"`
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
