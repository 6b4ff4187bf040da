package scheduler

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/internal/editdist"
)

var errBadExpr = errors.New("bad expression")

// field is one of the five cron fields.
type field struct {
	name     string
	min, max int
	names    []string // index = value (months from 1, days from 0)
}

var fields = []field{
	{"minute (1st field)", 0, 59, nil},
	{"hour (2nd field)", 0, 23, nil},
	{"day-of-month (3rd field)", 1, 31, nil},
	{"month (4th field)", 1, 12, []string{"", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{"day-of-week (5th field)", 0, 6, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

const fiveFields = "five fields are needed: minute hour day-of-month month day-of-week (for example \"30 9 * * 1-5\"), or @hourly, @daily, @weekly, @monthly, @yearly, @every 90s"

var descriptors = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@every"}

// explain builds the error for an expression the parser refused: what is
// wrong, in which field, and, when a correction can be guessed, that
// correction with the next five times it would fire.
func explain(given, raw string, loc *time.Location) error {
	reason, fix := diagnose(raw)
	if fix != "" {
		if x, err := parseIn(fix, loc); err == nil {
			if next := x.Upcoming(time.Now(), 5); len(next) == 5 {
				times := make([]string, len(next))
				for i, t := range next {
					times[i] = t.Format("Mon 2 Jan 2006 15:04 MST")
				}
				reason += fmt.Sprintf("; did you mean %q? It would fire at %s", fix, strings.Join(times, ", "))
			}
		}
	}
	return &app.FieldError{Field: "cron", Value: given, Reason: reason}
}

// diagnose says what is wrong with raw and guesses a correction ("" when
// it cannot).
func diagnose(raw string) (reason, fix string) {
	switch {
	case raw == "":
		return "is empty: " + fiveFields, ""
	case strings.HasPrefix(raw, "TZ=") || strings.HasPrefix(raw, "CRON_TZ="):
		zone, rest, _ := strings.Cut(raw, " ")
		return fmt.Sprintf("names its time zone inside the expression (%s): give the zone as timeZone (senclaw schedule add --tz) instead", zone), strings.TrimSpace(rest)
	case strings.HasPrefix(raw, "@"):
		return diagnoseDescriptor(raw)
	}
	f := strings.Fields(raw)
	var problems []string
	switch n := len(f); {
	case n == 6 && isYear(f[5]):
		problems = append(problems, fmt.Sprintf("has 6 fields and the last, %q, looks like a year, which cron does not have", f[5]))
		f = f[:5]
	case n == 6:
		problems = append(problems, fmt.Sprintf("has 6 fields: the first, %q, looks like seconds, which schedules do not have (they fire on the minute)", f[0]))
		f = f[1:]
	case n == 7:
		problems = append(problems, "has 7 fields (seconds ... year, the Quartz form): schedules have neither seconds nor years")
		f = f[1:6]
	case n == 3 || n == 4:
		var missing []string
		for _, fl := range fields[n:] {
			missing = append(missing, strings.Fields(fl.name)[0])
			f = append(f, "*")
		}
		problems = append(problems, fmt.Sprintf("has %d fields, missing %s: %s", n, strings.Join(missing, " and "), fiveFields))
	case n != 5:
		return fmt.Sprintf("has %d fields: %s", n, fiveFields), ""
	}
	guessed := true
	for i := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f[i]
		if _, err := cronParser.Parse(strings.Join(probe, " ")); err == nil {
			continue
		}
		why, fixed := fixField(fields[i], f[i])
		problems = append(problems, fmt.Sprintf("the %s, %q: %s", fields[i].name, f[i], why))
		if fixed == "" {
			guessed = false
		}
		f[i] = fixed
	}
	if len(problems) == 0 {
		return "is not a cron expression: " + fiveFields, ""
	}
	if !guessed {
		return strings.Join(problems, "; "), ""
	}
	return strings.Join(problems, "; "), strings.Join(f, " ")
}

func diagnoseDescriptor(raw string) (string, string) {
	if rest, ok := strings.CutPrefix(raw, "@every"); ok && (rest == "" || rest[0] == ' ') {
		arg := strings.TrimSpace(rest)
		if arg == "" {
			return "@every needs an interval, such as @every 90s, @every 5m or @every 1h30m", ""
		}
		d, err := time.ParseDuration(arg)
		if err != nil {
			if n, nerr := strconv.Atoi(arg); nerr == nil && n > 0 {
				return fmt.Sprintf("the interval %q has no unit", arg), "@every " + arg + "s"
			}
			return fmt.Sprintf("the interval %q is not a duration such as 90s, 5m or 1h30m", arg), ""
		}
		if d < MinEvery {
			return fmt.Sprintf("fires every %v, more often than every %v, the shortest interval (a schedule is not a loop)", d, MinEvery), "@every " + MinEvery.String()
		}
		return fmt.Sprintf("the interval %q is not understood", arg), ""
	}
	word := strings.Fields(raw)[0]
	if strings.EqualFold(word, "@reboot") {
		return "is not supported: schedules fire at times of day, not when the engine starts", ""
	}
	best, bestD := "", 4
	for _, d := range descriptors {
		if dist := editdist.Levenshtein(strings.ToLower(word), d); dist < bestD {
			best, bestD = d, dist
		}
	}
	reason := fmt.Sprintf("%q is not one of %s", word, strings.Join(descriptors, ", "))
	if best == "" || best == "@every" {
		return reason, ""
	}
	return reason, best
}

func isYear(s string) bool {
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '-' }) {
		if n, err := strconv.Atoi(part); err != nil || n < 1970 || n > 2199 {
			return false
		}
	}
	return s != ""
}

// fixField says why a field is wrong and guesses a corrected one ("" when
// it cannot): numbers out of range are brought into it (7 for Sunday is
// 0), names are matched to the nearest, a range that wraps (fri-mon,
// 22-2) is split in two, a zero step is dropped.
func fixField(fl field, text string) (string, string) {
	var whys, out []string
	ok := true
	for _, part := range strings.Split(text, ",") {
		why, fixed := fixPart(fl, part)
		if why != "" {
			whys = append(whys, why)
		}
		if fixed == "" {
			ok = false
		}
		out = append(out, fixed)
	}
	if len(whys) == 0 {
		whys = append(whys, "is not understood")
	}
	if !ok {
		return strings.Join(whys, "; "), ""
	}
	return strings.Join(whys, "; "), strings.Join(out, ",")
}

func fixPart(fl field, part string) (string, string) {
	if part == "" {
		return "an item of its list is empty", ""
	}
	if strings.ContainsAny(part, "LW#") && !strings.ContainsAny(strings.ToLower(part), "abcdefghijkmnopqrstuvxyz") {
		return fmt.Sprintf("uses %q: L, W and # (last day, nearest weekday, nth weekday) are not supported", part), ""
	}
	base, step, hasStep := strings.Cut(part, "/")
	var why string
	if hasStep {
		if n, err := strconv.Atoi(step); err != nil || n < 1 {
			why = fmt.Sprintf("the step %q must be a whole number from 1", step)
			hasStep = false
		} else if n > fl.max-fl.min+1 {
			why = fmt.Sprintf("the step %d is larger than the field's range", n)
			step = strconv.Itoa(fl.max - fl.min + 1)
		}
	}
	if base == "*" || base == "?" {
		if hasStep {
			return why, base + "/" + step
		}
		return why, base
	}
	lo, hi, isRange := strings.Cut(base, "-")
	a, whyA, okA := fixValue(fl, lo)
	b, whyB, okB := a, "", true
	if isRange {
		b, whyB, okB = fixValue(fl, hi)
	}
	for _, w := range []string{whyA, whyB} {
		if w != "" {
			why = joinWhy(why, w)
		}
	}
	if !okA || !okB {
		return why, ""
	}
	var fixed string
	switch {
	case !isRange:
		fixed = strconv.Itoa(a)
	case a <= b:
		fixed = fmt.Sprintf("%d-%d", a, b)
	default:
		why = joinWhy(why, fmt.Sprintf("the range runs backwards (%d to %d)", a, b))
		fixed = fmt.Sprintf("%d-%d,%d-%d", a, fl.max, fl.min, b)
		if hasStep {
			return why, "" // a wrapped range with a step has no one meaning
		}
	}
	if hasStep {
		fixed += "/" + step
	}
	return why, fixed
}

func joinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + " and " + b
}

// fixValue reads one number or name of the field and brings it into range.
func fixValue(fl field, s string) (int, string, bool) {
	short := strings.Fields(fl.name)[0]
	if n, err := strconv.Atoi(s); err == nil {
		switch {
		case fl.max == 6 && n == 7:
			return 0, "", true // Sunday, as many crons write it: robfig wants 0
		case n < fl.min:
			return fl.min, fmt.Sprintf("%d is below %d, the smallest %s", n, fl.min, short), true
		case n > fl.max:
			return fl.max, fmt.Sprintf("%d is above %d, the largest %s", n, fl.max, short), true
		}
		return n, "", true
	}
	if fl.names == nil {
		return 0, fmt.Sprintf("%q is not a number", s), false
	}
	low := strings.ToLower(s)
	for i, name := range fl.names {
		if name != "" && (low == name || (len(low) > 3 && strings.HasPrefix(low, name) && fullName(fl, i) == low)) {
			if low == name {
				return i, "", true
			}
			return i, fmt.Sprintf("%q is written %s: names are their first three letters", s, name), true
		}
	}
	best, bestD := -1, 3
	for i, name := range fl.names {
		if name == "" {
			continue
		}
		if d := editdist.Levenshtein(low, name); d < bestD {
			best, bestD = i, d
		}
		if d := editdist.Levenshtein(low, fullName(fl, i)); d < bestD {
			best, bestD = i, d
		}
	}
	if best < 0 {
		return 0, fmt.Sprintf("%q is neither a number nor a %s name", s, short), false
	}
	return best, fmt.Sprintf("%q is not a %s name (%s?)", s, short, fl.names[best]), true
}

func fullName(fl field, i int) string {
	if fl.max == 12 {
		return strings.ToLower(time.Month(i).String())
	}
	return strings.ToLower(time.Weekday(i).String())
}
