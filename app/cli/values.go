package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The flag values the commands share.

// intList is a repeatable flag of integers; "8000,8001" also works.
type intList []int

func (l *intList) String() string { return strings.Trim(fmt.Sprint([]int(*l)), "[]") }
func (l *intList) Type() string   { return "ports" }
func (l *intList) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil {
			return fmt.Errorf("%q is not a port number", part)
		}
		*l = append(*l, n)
	}
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Type() string       { return "value" }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// durationFlag is a duration that must have a unit and be at least min:
// "5" is refused with a hint (seconds? milliseconds?), not guessed at, and
// "0" is refused rather than meaning "no limit".
type durationFlag struct {
	v   *time.Duration
	min time.Duration
}

func (f durationFlag) Type() string { return "duration" }
func (f durationFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return ""
	}
	return f.v.String()
}

func (f durationFlag) Set(s string) error {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return fmt.Errorf("%q needs a unit: say 5s, 90s, 2m or 1h", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: say 5s, 90s, 2m or 1h", s)
	}
	if d < f.min {
		return fmt.Errorf("%q is too short: at least %s", s, f.min)
	}
	*f.v = d
	return nil
}

// onOff is a flag that takes on/off (or true/false).
type onOff struct{ v **bool }

func (f onOff) Type() string   { return "on|off" }
func (f onOff) String() string { return "" }
func (f onOff) Set(s string) error {
	var b bool
	switch strings.ToLower(s) {
	case "on", "true", "1", "yes":
		b = true
	case "off", "false", "0", "no":
	default:
		return fmt.Errorf("%q: use on or off", s)
	}
	*f.v = &b
	return nil
}
