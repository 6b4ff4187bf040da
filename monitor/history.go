package monitor

import "time"

// Sample is one point of a sandbox's CPU and memory history.
type Sample struct {
	// At is when the sample was taken.
	At time.Time `json:"at"`
	// CPUPercent is the sandbox's total CPU use; 100 is one core.
	CPUPercent float64 `json:"cpu_percent"`
	// RSSBytes is the sum of its processes' resident memory.
	RSSBytes uint64 `json:"rss_bytes"`
}

// ring keeps the newest samples up to a fixed count.
type ring struct {
	buf  []Sample
	next int // where the next sample goes once buf is full
	size int
}

// newRing returns an empty ring holding at most size samples.
func newRing(size int) ring {
	return ring{size: size}
}

// add appends s, dropping the oldest sample when the ring is full.
func (r *ring) add(s Sample) {
	if len(r.buf) < r.size {
		r.buf = append(r.buf, s)
		return
	}
	r.buf[r.next] = s
	r.next = (r.next + 1) % r.size
}

// samples returns a copy of the samples, oldest first.
func (r *ring) samples() []Sample {
	out := make([]Sample, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
