package monitor

import "time"

// procKey identifies a process across samples. The pid alone is not enough:
// after a process exits its pid can be reused, and subtracting the old
// process's CPU time from the new one's would give nonsense.
type procKey struct {
	pid     int
	created int64 // CreateTime in Unix nanoseconds
}

// cpuMark is a process's CPU time as of a sample.
type cpuMark struct {
	cpu float64
	at  time.Time
}

// keyOf returns the identity of info.
func keyOf(info ProcInfo) procKey {
	var created int64
	if !info.CreateTime.IsZero() {
		created = info.CreateTime.UnixNano()
	}
	return procKey{pid: info.ProcRef.Pid, created: created}
}

// measure turns details into Procs with CPU percentages against the previous
// sample, and returns the marks the next sample will compare against.
// Callers hold s.mu.
func (s *Sampler) measure(infos []ProcInfo, now time.Time) (map[int]Proc, map[procKey]cpuMark) {
	procs := make(map[int]Proc, len(infos))
	next := make(map[procKey]cpuMark, len(infos))
	for _, info := range infos {
		key := keyOf(info)
		p := Proc{
			Pid:        info.Pid,
			PPid:       info.PPid,
			Pgid:       info.Pgid,
			Command:    info.Command,
			CPUPercent: s.cpuPercent(key, info, now),
			CPUSeconds: info.CPUSeconds,
			RSSBytes:   info.RSSBytes,
			Started:    info.CreateTime,
		}
		if !info.CreateTime.IsZero() && now.After(info.CreateTime) {
			p.Elapsed = now.Sub(info.CreateTime)
		}
		procs[info.Pid] = p
		next[key] = cpuMark{cpu: info.CPUSeconds, at: now}
	}
	return procs, next
}

// cpuPercent is CPU time used since the previous sample over the wall time
// between them; 100 is one core.
//
// A process missing from the previous sample that started after it spent
// all its CPU time inside this window, so its whole CPU time counts; that
// makes short runs visible at once. Any other newcomer (the first sample,
// or a sandbox whose roots just appeared) gets 0: its CPU time may span
// hours and would show as a spike.
func (s *Sampler) cpuPercent(key procKey, info ProcInfo, now time.Time) float64 {
	if m, ok := s.prev[key]; ok {
		return rate(info.CPUSeconds-m.cpu, now.Sub(m.at))
	}
	if !s.prevAt.IsZero() && !info.CreateTime.IsZero() && info.CreateTime.After(s.prevAt) {
		return rate(info.CPUSeconds, now.Sub(s.prevAt))
	}
	return 0
}

// rate converts CPU seconds over a wall-clock span into percent of a core.
// A clock that stood still or went back yields 0 rather than a division
// blow-up.
func rate(cpuSeconds float64, wall time.Duration) float64 {
	if wall <= 0 || cpuSeconds <= 0 {
		return 0
	}
	return cpuSeconds / wall.Seconds() * 100
}
