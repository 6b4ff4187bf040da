package spaceapps

import (
	"context"
	"slices"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/monitor"
)

// MaxSockets bounds the sockets a runtime lists.
const MaxSockets = 200

// Runtime returns what app id runs now.
func (s *Supervisor) Runtime(ctx context.Context, id string) (*Runtime, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	v := s.view(a, false)
	a.mu.Lock()
	rt := &Runtime{
		AppID: id, State: v.State, StateText: v.StateText, Pid: v.Pid, UptimeSec: v.UptimeSec,
		Launches: v.Launches, TotalLaunches: v.TotalLaunches, Health: v.Health,
		HealthHistory: slices.Clone(a.health.history), LastLog: v.LastLog,
		History: []app.StatsPoint{}, Processes: []app.ProcessInfo{}, Sockets: []apitype.Socket{},
	}
	if rt.HealthHistory == nil {
		rt.HealthHistory = []HealthPoint{}
	}
	if last := a.rec.Last; last != nil {
		lv := &LaunchView{N: last.N, AtMs: last.At.UnixMilli(), RunID: last.RunID, Pid: last.Pid, Isolation: last.Isolation,
			Backend: last.Backend, Command: last.Command, Port: last.Port, Env: map[string]string{}, Settings: last.Settings, Ended: last.Ended}
		if last.EndedAt != nil {
			lv.EndedAtMs = last.EndedAt.UnixMilli()
		}
		if a.env != nil && a.running() {
			lv.Env = a.env
		}
		rt.Launch = lv
	}
	run := a.run
	a.mu.Unlock()
	sid := sandboxID(id)
	rt.Proxy.Denied, rt.Proxy.RecentDenied = s.e.NetworkDenials(sid)
	rt.Proxy.Allowed = s.e.NetworkAllowed(sid)
	if run == nil {
		return rt, nil
	}
	st, err := s.e.Stats(ctx, sid)
	if err != nil {
		rt.Note = "the app's processes could not be sampled: " + err.Error()
		return rt, nil
	}
	rt.CPUPercent, rt.RSSMB, rt.MemoryLimitMB, rt.Note = st.CPUPercent, st.RSSMB, st.MemoryLimitMB, st.Note
	rt.History, rt.Processes = st.History, st.Processes
	if st.Source == "container" {
		// A container's samples come from its daemon; the host sampler
		// still has the history of the tree when this machine sees it.
		if hs, err := s.e.HostStats(sid); err == nil && len(hs.History) > 0 {
			rt.History = hs.History
		}
	}
	var socks []monitor.Socket
	socks, rt.SocketsTruncated = monitor.Sockets(ctx, appPids(ctx, run.Pids()), MaxSockets)
	for _, so := range socks {
		rt.Sockets = append(rt.Sockets, apitype.Socket{Pid: so.Pid, Kind: so.Kind, Local: so.Local, Remote: so.Remote, State: so.State})
	}
	return rt, nil
}

// appPids are the pids of a launch's tree without the engine's plumbing
// (bwrap, the forwarder), whose sockets are not the app's.
func appPids(ctx context.Context, pids []int) []int {
	var out []int
	for _, pid := range pids {
		if h, err := monitor.Describe(ctx, pid); err == nil && !app.Machinery(h.Command) {
			out = append(out, pid)
		}
	}
	return out
}

// Logs returns the end of app id's log: limit bytes (0 is DefaultLogRead,
// at most MaxLogRead).
func (s *Supervisor) Logs(id string, limit int) (*LogChunk, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	if limit, err = logLimit(limit); err != nil {
		return nil, err
	}
	c := a.log.tail(limit)
	c.AppID = id
	return &c, nil
}

// ClearLogs empties app id's log.
func (s *Supervisor) ClearLogs(id string) error {
	a, err := s.find(id)
	if err != nil {
		return err
	}
	return a.log.clear()
}

// FollowLogs returns the end of app id's log (as Logs) and a channel of
// what is written to it after that; stop ends the following. A follower
// that does not keep up loses bytes, never the app.
func (s *Supervisor) FollowLogs(id string, limit int) (start *LogChunk, more <-chan []byte, stop func(), err error) {
	a, err := s.find(id)
	if err != nil {
		return nil, nil, nil, err
	}
	if limit, err = logLimit(limit); err != nil {
		return nil, nil, nil, err
	}
	c, ch, stop := a.log.follow(limit)
	c.AppID = id
	return &c, ch, stop, nil
}

// logLimit applies the default and bounds of a log read.
func logLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultLogRead, nil
	case limit < 1 || limit > MaxLogRead:
		return 0, bad("limit", limit, "must be between 1 and %d bytes (1 MiB)", MaxLogRead)
	}
	return limit, nil
}
