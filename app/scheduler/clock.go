package scheduler

import "time"

// Clock is the scheduler's one source of time. Tests give it a fake one
// that they move, so that a firing at 09:30 across a change of daylight
// saving time is checked without waiting for it.
type Clock interface {
	Now() time.Time
	// Timer returns a channel that receives once d has passed, and a
	// function that stops it.
	Timer(d time.Duration) (<-chan time.Time, func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Timer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}
