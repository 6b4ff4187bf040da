package scheduler

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/senclaw/sandbox/app"
)

// MinEvery is the shortest @every interval: a schedule is not a loop.
const MinEvery = 10 * time.Second

// cronParser reads the five standard fields and the @ forms, robfig/cron's
// standard parser; the time zone is the schedule's own field, not a
// CRON_TZ= prefix.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig/cron's mark of a field given as * (or ?).
const starBit = 1 << 63

// Expr is a schedule's expression in its time zone.
type Expr struct {
	raw string
	loc *time.Location
	// spec is the field form; nil for @every, which has only a delay.
	spec  *cron.SpecSchedule
	every time.Duration
}

// ParseExpr parses a cron expression (five fields, @hourly, @daily,
// @every 90s, ...) in the IANA time zone zone ("" or "Local": the
// engine's local zone). A bad expression is a *app.FieldError naming the
// cron field that is wrong and, when a correction can be guessed, the
// corrected expression and the next five times it would fire.
func ParseExpr(expr, zone string) (*Expr, error) {
	loc, err := loadZone(zone)
	if err != nil {
		return nil, err
	}
	raw := strings.Join(strings.Fields(expr), " ")
	x, err := parseIn(raw, loc)
	if err != nil {
		return nil, explain(expr, raw, loc)
	}
	if x.Next(time.Now()).IsZero() {
		return nil, &app.FieldError{Field: "cron", Value: expr, Reason: "never fires: no date matches it in the next five years (does that day exist in that month?)"}
	}
	return x, nil
}

// parseIn parses raw with the library, and applies our own limits.
func parseIn(raw string, loc *time.Location) (*Expr, error) {
	if strings.HasPrefix(raw, "TZ=") || strings.HasPrefix(raw, "CRON_TZ=") {
		return nil, errBadExpr
	}
	s, err := cronParser.Parse(raw)
	if err != nil {
		return nil, err
	}
	x := &Expr{raw: raw, loc: loc}
	switch s := s.(type) {
	case *cron.SpecSchedule:
		x.spec = s
		s.Location = loc
	case cron.ConstantDelaySchedule:
		if s.Delay < MinEvery {
			return nil, errBadExpr
		}
		x.every = s.Delay
	default:
		return nil, errBadExpr
	}
	return x, nil
}

func loadZone(zone string) (*time.Location, error) {
	switch zone {
	case "", "Local", "local":
		return time.Local, nil
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || strings.HasPrefix(zone, "/") {
		return nil, &app.FieldError{Field: "timeZone", Value: zone, Reason: "is not a time zone this machine knows: give an IANA name such as Europe/Berlin, America/New_York or UTC, or leave it empty for the engine's local zone"}
	}
	return loc, nil
}

// String is the expression as parsed (spaces normalised).
func (x *Expr) String() string { return x.raw }

// Location is the expression's time zone.
func (x *Expr) Location() *time.Location { return x.loc }

// Next returns the first time after t at which the expression fires, in
// its zone; the zero time if none comes in five years.
//
// Daylight saving time follows what cron users expect (Vixie cron's
// rules), which robfig/cron's Next alone does not: a job at a fixed hour
// whose time falls in the hour skipped in spring runs once, at the first
// instant after the jump, rather than not at all that day; and one whose
// time comes twice in autumn runs once, the first time. A job whose hour
// field is * runs in every hour that really happens, once each.
func (x *Expr) Next(t time.Time) time.Time {
	t = t.In(x.loc)
	if x.spec == nil {
		return t.Add(x.every - time.Duration(t.Nanosecond()))
	}
	hourly := x.spec.Hour&starBit != 0
	for i := 0; i < 4; i++ {
		c := x.spec.Next(t)
		if c.IsZero() || hourly {
			return c
		}
		if jump := x.skippedSlot(t, c); !jump.IsZero() {
			return jump
		}
		if !repeatedWallTime(c) {
			return c
		}
		t = c // the second time that wall-clock time comes round
	}
	return time.Time{}
}

// skippedSlot returns the first instant after a forward jump of the clock
// within (t, c) when a wall-clock time the expression matches lies in the
// skipped stretch; else the zero time.
func (x *Expr) skippedSlot(t, c time.Time) time.Time {
	for a := t; a.Before(c); {
		b := a.Add(24 * time.Hour)
		if b.After(c) {
			b = c
		}
		_, oa := a.Zone()
		_, ob := b.Zone()
		if ob > oa {
			jump := transition(a, b, x.loc)
			if jump.After(t) && jump.Before(c) && x.matchesGap(jump, time.Duration(ob-oa)*time.Second) {
				return jump
			}
		}
		a = b
	}
	return time.Time{}
}

// transition finds the first second in (a, b] whose UTC offset is b's.
func transition(a, b time.Time, loc *time.Location) time.Time {
	_, want := b.Zone()
	lo, hi := a.Unix(), b.Unix()
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, o := time.Unix(mid, 0).In(loc).Zone(); o == want {
			hi = mid
		} else {
			lo = mid
		}
	}
	return time.Unix(hi, 0).In(loc)
}

// matchesGap reports whether a minute of the wall-clock stretch the jump
// at jump skipped (gap long, ending at jump's wall-clock time) matches.
func (x *Expr) matchesGap(jump time.Time, gap time.Duration) bool {
	wall := time.Date(jump.Year(), jump.Month(), jump.Day(), jump.Hour(), jump.Minute(), 0, 0, time.UTC).Add(-gap)
	for w := wall; w.Before(wall.Add(gap)); w = w.Add(time.Minute) {
		s := x.spec
		if 1<<uint(w.Minute())&s.Minute != 0 && 1<<uint(w.Hour())&s.Hour != 0 &&
			1<<uint(w.Month())&s.Month != 0 && dayMatches(s, w) {
			return true
		}
	}
	return false
}

// dayMatches is robfig/cron's rule: with either day field *, both must
// match; with both given, either may.
func dayMatches(s *cron.SpecSchedule, t time.Time) bool {
	dom := 1<<uint(t.Day())&s.Dom != 0
	dow := 1<<uint(t.Weekday())&s.Dow != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// repeatedWallTime reports whether c's wall-clock time already happened
// once, earlier, because the clock was set back (30 minutes to 2 hours in
// every zone that does it).
func repeatedWallTime(c time.Time) bool {
	for _, back := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		e := c.Add(-back)
		if e.Hour() == c.Hour() && e.Minute() == c.Minute() && e.Day() == c.Day() && e.Second() == c.Second() {
			return true
		}
	}
	return false
}

// Upcoming returns the next n times after t.
func (x *Expr) Upcoming(t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		t = x.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}
