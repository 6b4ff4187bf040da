package spaceapps

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/monitor"
)

// AppView is one app as lists and the card show it.
type AppView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Dir is where it runs; InPlace says it is the registered folder
	// itself, not the engine's copy.
	Dir     string `json:"dir"`
	InPlace bool   `json:"inPlace"`
	// Port and URL: where it serves, on 127.0.0.1 only (0 and "" until
	// the engine picked a port for a port-0 app).
	Port       int    `json:"port"`
	URL        string `json:"url"`
	HealthPath string `json:"healthPath"`
	Restart    string `json:"restart"`
	Autostart  bool   `json:"autostart"`
	// State is stopped, starting, running, stopping, backoff,
	// crash-looping, exited, failed, port-taken or outside; StateText
	// says it in words.
	State         string `json:"state"`
	StateText     string `json:"stateText"`
	StoppedByUser bool   `json:"stoppedByUser"`
	// Pid is the running launch's host pid (for outside, the pid of the
	// process that holds the port); 0 when none.
	Pid         int   `json:"pid"`
	StartedAtMs int64 `json:"startedAtMs"`
	UptimeSec   int64 `json:"uptimeSec"`
	// Launches since a person last started it (the card warns above 3),
	// and in all.
	Launches      int        `json:"launches"`
	TotalLaunches int        `json:"totalLaunches"`
	Health        HealthView `json:"health"`
	// CPUPercent (100 is one core) and RSSMB are of the app's whole
	// process tree, without the sandbox's helpers (bwrap, the forwarder);
	// Spark is their last 30 samples (one a second), measured the same way.
	CPUPercent float64          `json:"cpuPercent"`
	RSSMB      float64          `json:"rssMb"`
	Spark      []app.StatsPoint `json:"spark"`
	Sandbox    SandboxSummary   `json:"sandbox"`
	// NeedsRestart: what the running process got at launch differs from
	// the saved configuration; the reasons say how.
	NeedsRestart        bool     `json:"needsRestart"`
	NeedsRestartReasons []string `json:"needsRestartReasons"`
	// NextAttemptAtMs is when a backing-off app is restarted.
	NextAttemptAtMs int64 `json:"nextAttemptAtMs,omitempty"`
	// LastLog are the log's last lines when it gave up or failed.
	LastLog []string `json:"lastLog"`
	// PortHolder is the process that holds the app's port (port-taken,
	// outside); the engine leaves it alone.
	PortHolder *monitor.Holder `json:"portHolder,omitempty"`
}

// HealthView is what the last health probe said.
type HealthView struct {
	// Status is ok, failing or unknown (not probed yet).
	Status      string `json:"status"`
	HTTPStatus  int    `json:"httpStatus,omitempty"`
	LatencyMs   int64  `json:"latencyMs"`
	LastError   string `json:"lastError,omitempty"`
	CheckedAtMs int64  `json:"checkedAtMs,omitempty"`
}

// SandboxSummary is the Sandbox, Read mode and Network columns of a row.
type SandboxSummary struct {
	// Enabled and Forced are the configuration.
	Enabled bool `json:"enabled"`
	Forced  bool `json:"forced"`
	// Isolation is what the running process actually got (bwrap, docker,
	// none, ...), "" when it does not run; Backend is its backend, or the
	// configured one when it does not run.
	Isolation string `json:"isolation"`
	Backend   string `json:"backend"`
	ReadMode  string `json:"readMode"`
	Network   string `json:"network"`
	HostCount int    `json:"hostCount"`
	// Denied and RecentDenied are the proxy's refusals since the engine
	// started (the last 12 distinct hosts, newest last); Allowed the
	// connections it let through.
	Denied       int      `json:"denied"`
	RecentDenied []string `json:"recentDenied"`
	Allowed      int      `json:"allowed"`
}

// Overview sums up every app for the card's header and the tray.
type Overview struct {
	Apps    int `json:"apps"`
	Running int `json:"running"`
	// Sandboxed and Unsandboxed count running apps by what they got.
	Sandboxed    int `json:"sandboxed"`
	Unsandboxed  int `json:"unsandboxed"`
	NeedsRestart int `json:"needsRestart"`
	CrashLooping int `json:"crashLooping"`
	Denied       int `json:"denied"`
	// Isolation is the engine's recommended backend for new launches
	// ("" when none can isolate).
	Isolation string `json:"isolation"`
}

// List returns every app, running ones first then by name, and the
// overview.
func (s *Supervisor) List(ctx context.Context) ([]AppView, Overview) {
	s.mu.Lock()
	all := s.list()
	s.mu.Unlock()
	views := make([]AppView, 0, len(all))
	ov := Overview{Apps: len(all), Isolation: s.e.Capabilities(ctx, false).Recommended}
	for _, a := range all {
		v := s.view(a, true)
		views = append(views, v)
		if v.Sandbox.Isolation != "" {
			ov.Running++
			if isNone(v.Sandbox.Isolation) {
				ov.Unsandboxed++
			} else {
				ov.Sandboxed++
			}
		}
		if v.NeedsRestart {
			ov.NeedsRestart++
		}
		if v.State == StateCrashLooping {
			ov.CrashLooping++
		}
		ov.Denied += v.Sandbox.Denied
	}
	slices.SortStableFunc(views, func(a, b AppView) int {
		ra, rb := a.Pid > 0, b.Pid > 0
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return views, ov
}

// AppDetail is one app with its manifest and registration.
type AppDetail struct {
	AppView
	Manifest Manifest `json:"manifest"`
	// Source is where it was registered from: a folder, or "zip upload".
	Source         string `json:"source"`
	RegisteredAtMs int64  `json:"registeredAtMs"`
	// Env is the app's own environment, values that look secret masked.
	Env map[string]string `json:"env"`
}

// Get returns one app.
func (s *Supervisor) Get(id string) (*AppDetail, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	d := &AppDetail{AppView: s.view(a, true)}
	a.mu.Lock()
	d.Manifest, d.Source, d.RegisteredAtMs, d.Env = a.rec.Manifest, a.rec.Source, a.rec.RegisteredAt.UnixMilli(), maskEnv(a.rec.Env)
	a.mu.Unlock()
	return d, nil
}

// view is a's row; stats adds CPU, memory and the proxy's counts.
func (s *Supervisor) view(a *appState, stats bool) AppView {
	a.mu.Lock()
	r := a.rec
	m := r.Manifest
	v := AppView{
		ID: a.id, Name: m.Name, Description: m.Description, Dir: r.Dir, InPlace: r.InPlace,
		Port: r.Port, HealthPath: m.Runtime.HealthPath, Restart: m.Runtime.Restart, Autostart: m.Runtime.Autostart,
		State: a.state, StateText: a.text, StoppedByUser: r.StoppedByUser,
		Launches: r.Launches, TotalLaunches: r.TotalLaunches,
		Health:              a.health.view(),
		Spark:               []app.StatsPoint{},
		NeedsRestartReasons: s.restartReasons(a),
		LastLog:             slices.Clone(a.lastLog),
		PortHolder:          a.holder,
	}
	if v.Port != 0 {
		v.URL = fmt.Sprintf("http://127.0.0.1:%d/", v.Port)
	}
	if v.LastLog == nil {
		v.LastLog = []string{}
	}
	v.NeedsRestart = len(v.NeedsRestartReasons) > 0
	set := r.Sandbox
	v.Sandbox = SandboxSummary{Enabled: set.Enabled, Forced: r.Forced, Backend: set.Backend, ReadMode: set.ReadMode, Network: set.Network, HostCount: len(set.Hosts), RecentDenied: []string{}}
	if a.running() && r.Last != nil {
		v.Pid, v.Sandbox.Isolation, v.Sandbox.Backend = r.Last.Pid, r.Last.Isolation, r.Last.Backend
		v.StartedAtMs = a.startedAt.UnixMilli()
		v.UptimeSec = int64(s.clock.Now().Sub(a.startedAt) / time.Second)
	}
	if a.state == StateOutside && a.holder != nil {
		v.Pid = a.holder.Pid
		v.Sandbox.Isolation = "none (outside the engine)"
	}
	if a.state == StateBackoff {
		v.NextAttemptAtMs = a.nextAttempt.UnixMilli()
	}
	running := a.running()
	a.mu.Unlock()
	if !stats {
		return v
	}
	sid := sandboxID(a.id)
	v.Sandbox.Denied, v.Sandbox.RecentDenied = s.e.NetworkDenials(sid)
	v.Sandbox.Allowed = s.e.NetworkAllowed(sid)
	if running {
		if st, err := s.e.HostStats(sid); err == nil {
			v.CPUPercent, v.RSSMB = st.CPUPercent, st.RSSMB
			h := st.History
			if len(h) > 30 {
				h = h[len(h)-30:]
			}
			v.Spark = h
		}
	}
	return v
}

func (h *health) view() HealthView {
	v := HealthView{Status: h.status, HTTPStatus: h.code, LatencyMs: h.latencyMs, LastError: h.lastError}
	if !h.checkedAt.IsZero() {
		v.CheckedAtMs = h.checkedAt.UnixMilli()
	}
	if v.Status == "" {
		v.Status = HealthUnknown
	}
	return v
}

// restartReasons says why a running app needs a restart, from what its
// launch got (stored then) against the saved configuration. a.mu is held.
func (s *Supervisor) restartReasons(a *appState) []string {
	out := []string{}
	if a.state == StateOutside {
		return append(out, "running outside the engine: a process started from the app's directory holds its port")
	}
	last := a.rec.Last
	if !a.running() || last == nil {
		return out
	}
	cur := a.rec.Sandbox
	switch {
	case cur.Enabled && isNone(last.Isolation):
		out = append(out, "configured with a sandbox, running without one")
	case !cur.Enabled && !isNone(last.Isolation):
		out = append(out, "configured without a sandbox, running in one")
	case cur.Enabled:
		for _, f := range changedFields(last.Settings, cur) {
			if !slices.Contains(launchFixed, f) || f == "enabled" {
				continue
			}
			// auto picks the best backend, which the launch got.
			if f == "backend" && (cur.Backend == last.Backend || cur.Backend == "auto") {
				continue
			}
			out = append(out, f+" changed since it started")
		}
	}
	if last.Registration != a.rec.Registration {
		out = append(out, "the app was registered again (its manifest, files or environment may have changed) since it started")
	}
	return out
}
