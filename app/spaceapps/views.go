package spaceapps

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/principal"
)

// List returns the apps ctx's principal sees (the owner: those of
// tenant, every tenant's for "*"), running ones first then by name, and
// their overview.
func (s *Supervisor) List(ctx context.Context, tenant string) ([]AppView, Overview) {
	if p := principal.Of(ctx); !p.IsOwner() {
		tenant = p.Tenant
	}
	s.mu.Lock()
	all := s.list()
	s.mu.Unlock()
	all = slices.DeleteFunc(all, func(a *appState) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return tenant != "*" && a.rec.Tenant != tenant
	})
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

// TenantOf returns the tenant of app id, and whether there is such an app.
func (s *Supervisor) TenantOf(id string) (string, bool) {
	a, err := s.find(id)
	if err != nil {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec.Tenant, true
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
		ID: a.id, Name: m.Name, Description: m.Description, Dir: r.Dir, InPlace: r.InPlace, Tenant: r.Tenant,
		Port: r.Port, HealthPath: m.Runtime.HealthPath, Restart: m.Runtime.Restart, Autostart: m.Runtime.Autostart,
		State: a.state, StateText: a.text, StoppedByUser: r.StoppedByUser,
		Launches: r.Launches, TotalLaunches: r.TotalLaunches,
		Health:              a.health.view(),
		Spark:               []app.StatsPoint{},
		NeedsRestartReasons: s.restartReasons(a),
		LastLog:             slices.Clone(a.lastLog),
		PortHolder:          portHolder(a.holder),
	}
	if v.Port != 0 {
		v.URL = fmt.Sprintf("http://127.0.0.1:%d/", v.Port)
	}
	if v.LastLog == nil {
		v.LastLog = []string{}
	}
	v.NeedsRestart = len(v.NeedsRestartReasons) > 0
	set := r.Sandbox
	v.Sandbox = SandboxSummary{Enabled: set.Enabled, Forced: r.Forced, DisabledBy: r.DisabledBy, Backend: set.Backend, ReadMode: set.ReadMode, Network: set.Network, HostCount: len(set.Hosts), RecentDenied: []string{}}
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
