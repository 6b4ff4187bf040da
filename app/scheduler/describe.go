package scheduler

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Describe says when an expression fires, in words: "every day at 09:30",
// "on weekdays every 15 minutes", "every 1h30m". It reads the expression
// as written; anything it has no words for is said field by field.
func Describe(expr string) string {
	f := strings.Fields(expr)
	if len(f) == 0 {
		return ""
	}
	switch f[0] {
	case "@yearly", "@annually":
		return "every year on 1 January at 00:00"
	case "@monthly":
		return "on the 1st of every month at 00:00"
	case "@weekly":
		return "every Sunday at 00:00"
	case "@daily", "@midnight":
		return "every day at 00:00"
	case "@hourly":
		return "every hour, on the hour"
	case "@every":
		if len(f) == 2 {
			if d, err := time.ParseDuration(f[1]); err == nil {
				return "every " + words(d)
			}
		}
		return expr
	}
	if len(f) != 5 {
		return expr
	}
	when := timeOfDay(f[0], f[1])
	days := dayWords(f[2], f[4])
	if f[3] != "*" && f[3] != "?" {
		days = strings.TrimSpace(days + " in " + list(f[3], monthName))
	}
	if days == "" {
		if strings.HasPrefix(when, "at ") {
			return "every day " + when
		}
		return when
	}
	return days + " " + when
}

// timeOfDay describes the minute and hour fields.
func timeOfDay(m, h string) string {
	mn, mOK := strconv.Atoi(m)
	switch {
	case m == "*" && h == "*":
		return "every minute"
	case strings.HasPrefix(m, "*/") && h == "*":
		return "every " + plural(m[2:], "minute")
	case mOK == nil && h == "*":
		if mn == 0 {
			return "every hour, on the hour"
		}
		return fmt.Sprintf("every hour at :%02d", mn)
	case mOK == nil && strings.HasPrefix(h, "*/"):
		return fmt.Sprintf("every %s at :%02d", plural(h[2:], "hour"), mn)
	case mOK == nil && allNumbers(h):
		var times []string
		for _, hh := range strings.Split(h, ",") {
			n, _ := strconv.Atoi(hh)
			times = append(times, fmt.Sprintf("%02d:%02d", n, mn))
		}
		return "at " + joinAnd(times)
	case mOK == nil && isRange(h):
		a, b, _ := strings.Cut(h, "-")
		return fmt.Sprintf("every hour at :%02d from %02d:00 to %02d:%02d", mn, atoi(a), atoi(b), mn)
	case h == "*":
		return "at minute " + m + " of every hour"
	}
	return "at minute " + m + " of hour " + h
}

// dayWords describes the day-of-month and day-of-week fields ("" for any
// day).
func dayWords(dom, dow string) string {
	var parts []string
	switch strings.ToLower(dow) {
	case "*", "?":
	case "1-5", "mon-fri":
		parts = append(parts, "on weekdays")
	case "0,6", "6,0", "sat,sun", "sun,sat", "6-7":
		parts = append(parts, "on weekends")
	default:
		if isRange(dow) && !strings.Contains(dow, "/") {
			a, b, _ := strings.Cut(dow, "-")
			parts = append(parts, dayName(a)+" to "+dayName(b))
		} else if !strings.ContainsAny(dow, "-/") {
			parts = append(parts, "every "+list(dow, dayName))
		} else {
			parts = append(parts, "on days of the week "+dow)
		}
	}
	if dom != "*" && dom != "?" {
		d := "on day " + dom + " of the month"
		if dom == "1" {
			d = "on the 1st of the month"
		}
		if len(parts) > 0 {
			d = "or " + d // cron's rule: either day field may match
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, " ")
}

func list(s string, name func(string) string) string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		out = append(out, name(p))
	}
	return joinAnd(out)
}

func dayName(s string) string {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= 7 {
		return time.Weekday(n % 7).String()
	}
	for i := 0; i < 7; i++ {
		if strings.EqualFold(s, time.Weekday(i).String()[:3]) {
			return time.Weekday(i).String()
		}
	}
	return s
}

func monthName(s string) string {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= 12 {
		return time.Month(n).String()
	}
	for i := 1; i <= 12; i++ {
		if strings.EqualFold(s, time.Month(i).String()[:3]) {
			return time.Month(i).String()
		}
	}
	return s
}

// words says a duration the way people do: "90 seconds", "5 minutes",
// "1h30m".
func words(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return plural(strconv.Itoa(int(d/time.Hour)), "hour")
	case d%time.Minute == 0 && d < time.Hour:
		return plural(strconv.Itoa(int(d/time.Minute)), "minute")
	case d < 2*time.Minute && d%time.Second == 0:
		return plural(strconv.Itoa(int(d/time.Second)), "second")
	}
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "m0")
}

func plural(n, unit string) string {
	if n == "1" {
		return unit
	}
	return n + " " + unit + "s"
}

func allNumbers(s string) bool {
	for _, p := range strings.Split(s, ",") {
		if _, err := strconv.Atoi(p); err != nil {
			return false
		}
	}
	return len(strings.Split(s, ",")) <= 6
}

func isRange(s string) bool {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return false
	}
	_, ea := strconv.Atoi(a)
	_, eb := strconv.Atoi(b)
	return ea == nil && eb == nil || (ok && !strings.ContainsAny(s, ",/"))
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
