package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatalf("no zone data on this machine: %v", err)
	}
	return loc
}

// TestNextAcrossDaylightSaving checks the times an expression fires
// around Berlin's changes of 2026 (29 March: 02:00 becomes 03:00; 25
// October: 03:00 becomes 02:00 again).
func TestNextAcrossDaylightSaving(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	at := func(month time.Month, day, h, m int, offset int) string {
		return time.Date(2026, month, day, h, m, 0, 0, time.FixedZone("", offset*3600)).UTC().Format(time.RFC3339)
	}
	cases := []struct {
		name string
		expr string
		from time.Time
		want []string
	}{
		{"daily_spring", "30 9 * * *", time.Date(2026, 3, 28, 0, 0, 0, 0, loc),
			[]string{at(3, 28, 9, 30, 1), at(3, 29, 9, 30, 2), at(3, 30, 9, 30, 2)}},
		{"daily_autumn", "30 9 * * *", time.Date(2026, 10, 24, 0, 0, 0, 0, loc),
			[]string{at(10, 24, 9, 30, 2), at(10, 25, 9, 30, 1), at(10, 26, 9, 30, 1)}},
		// 02:30 does not exist on 29 March: it runs at 03:00, the first
		// instant after the jump, rather than not at all.
		{"skipped_hour_runs_after_the_jump", "30 2 * * *", time.Date(2026, 3, 28, 12, 0, 0, 0, loc),
			[]string{at(3, 29, 3, 0, 2), at(3, 30, 2, 30, 2)}},
		// 02:30 comes twice on 25 October: it runs once, the first time.
		{"repeated_hour_runs_once", "30 2 * * *", time.Date(2026, 10, 24, 12, 0, 0, 0, loc),
			[]string{at(10, 25, 2, 30, 2), at(10, 26, 2, 30, 1)}},
		// An hourly job runs in every hour that really happens.
		{"hourly_autumn_runs_in_both_hours", "0 * * * *", time.Date(2026, 10, 25, 1, 30, 0, 0, loc),
			[]string{at(10, 25, 2, 0, 2), at(10, 25, 2, 0, 1), at(10, 25, 3, 0, 1)}},
		{"hourly_spring_has_no_2am", "0 * * * *", time.Date(2026, 3, 29, 1, 30, 0, 0, loc),
			[]string{at(3, 29, 3, 0, 2), at(3, 29, 4, 0, 2)}},
		{"weekdays", "0 8 * * 1-5", time.Date(2026, 3, 27, 12, 0, 0, 0, loc),
			[]string{at(3, 30, 8, 0, 2), at(3, 31, 8, 0, 2)}},
		{"every_90s_keeps_its_rhythm", "@every 90s", time.Date(2026, 3, 29, 1, 59, 0, 0, loc),
			[]string{at(3, 29, 2, 0, 1)[:14] + "00:30Z", at(3, 29, 3, 2, 2)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x, err := ParseExpr(tc.expr, "Europe/Berlin")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range x.Upcoming(tc.from, len(tc.want)) {
				got = append(got, n.UTC().Format(time.RFC3339))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("%s from %v:\n got %v\nwant %v", tc.expr, tc.from, got, tc.want)
			}
		})
	}
}

// TestInvalidExpressionsNameTheFieldAndSuggest checks that a refused
// expression names the cron field that is wrong and, when a correction
// can be guessed, gives it with the next five times it would fire.
func TestInvalidExpressionsNameTheFieldAndSuggest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, expr, zone string
		field            string // the error's field
		says             string // a phrase of the reason
		fix              string // the suggested expression; "" for none
	}{
		{"hour_25", "0 25 * * *", "", "cron", "hour (2nd field), \"25\": 25 is above 23", "0 23 * * *"},
		{"minute_60", "60 9 * * *", "", "cron", "minute (1st field)", "59 9 * * *"},
		{"seconds_field", "0 30 9 * * *", "", "cron", "looks like seconds", "30 9 * * *"},
		{"year_field", "30 9 * * * 2027", "", "cron", "looks like a year", "30 9 * * *"},
		{"quartz_seven", "0 30 9 ? * MON-FRI 2027", "", "cron", "7 fields", "30 9 ? * MON-FRI"},
		{"sunday_as_7", "0 9 * * 7", "", "cron", "day-of-week (5th field)", "0 9 * * 0"},
		{"wrapping_days", "0 9 * * fri-mon", "", "cron", "runs backwards", "0 9 * * 5-6,0-1"},
		{"day_name_typo", "0 9 * * mondy", "", "cron", "(mon?)", "0 9 * * 1"},
		{"full_month_name", "0 9 1 January *", "", "cron", "is written jan", "0 9 1 1 *"},
		{"missing_field", "0 9 * *", "", "cron", "missing day-of-week", "0 9 * * *"},
		{"every_without_unit", "@every 90", "", "cron", "no unit", "@every 90s"},
		{"every_too_often", "@every 1s", "", "cron", "shortest interval", "@every 10s"},
		{"descriptor_typo", "@hourley", "", "cron", "is not one of", "@hourly"},
		{"reboot", "@reboot", "", "cron", "not supported", ""},
		{"last_day", "0 9 L * *", "", "cron", "not supported", ""},
		{"zone_prefix", "CRON_TZ=Europe/Berlin 0 9 * * *", "", "cron", "timeZone", "0 9 * * *"},
		{"empty", "  ", "", "cron", "is empty", ""},
		{"never", "0 9 30 2 *", "", "cron", "never fires", ""},
		{"bad_zone", "0 9 * * *", "Mars/Olympus", "timeZone", "IANA name", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseExpr(tc.expr, tc.zone)
			var fe *app.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want a field error on %s", err, tc.field)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.says) {
				t.Errorf("error %q does not say %q", msg, tc.says)
			}
			if tc.fix == "" {
				if strings.Contains(msg, "did you mean") {
					t.Errorf("error %q guesses a correction where none is sure", msg)
				}
				return
			}
			if !strings.Contains(msg, "did you mean \""+tc.fix+"\"? It would fire at ") || strings.Count(msg, ", ") < 4 {
				t.Errorf("error %q does not suggest %q with five times", msg, tc.fix)
			}
			if _, err := ParseExpr(tc.fix, tc.zone); err != nil {
				t.Errorf("the suggestion %q is itself refused: %v", tc.fix, err)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"30 9 * * *":     "every day at 09:30",
		"0 8 * * 1-5":    "on weekdays at 08:00",
		"*/15 * * * *":   "every 15 minutes",
		"5 * * * *":      "every hour at :05",
		"0 * * * *":      "every hour, on the hour",
		"* * * * *":      "every minute",
		"0 0 1 * *":      "on the 1st of the month at 00:00",
		"0 9,17 * * mon": "every Monday at 09:00 and 17:00",
		"0 3 * 1,7 *":    "in January and July at 03:00",
		"@every 90s":     "every 90 seconds",
		"@every 5m":      "every 5 minutes",
		"@every 1h30m":   "every 1h30m",
		"@daily":         "every day at 00:00",
	}
	for expr, want := range cases {
		if got := Describe(expr); got != want {
			t.Errorf("Describe(%q) = %q, want %q", expr, got, want)
		}
	}
}
