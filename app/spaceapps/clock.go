package spaceapps

import "time"

// Clock is the supervisor's one source of time: when to restart a crashed
// app (backoff), when it gave up (5 failed starts in 5 minutes), when it
// has been healthy long enough for the backoff to reset, when its start
// deadline and its next health probe are due. Tests inject a fake one so
// that backoff and give-up are checked without sleeping for minutes.
type Clock interface {
	Now() time.Time
	// After sends the time on the channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
