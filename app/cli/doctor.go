package cli

import (
	"context"
	"net/http"
	"strings"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/doctor"
)

// Doctor executes `senclaw doctor [--repair]`: what the daemon's doctor
// found, each check with what to do, and with repair what it did. It
// exits 1 when a check failed. restarted, when the repair replaced the
// store, waits for the daemon to stop and starts it again, and says how
// it stands then.
func Doctor(ctx context.Context, c *client.Client, repair, jsonOut bool, restarted func() (*client.Client, error), io IO) int {
	var rep doctor.Report
	var err error
	if repair {
		err = c.Do(ctx, http.MethodPost, "/doctor/repair", nil, nil, &rep)
	} else {
		err = c.Do(ctx, http.MethodGet, "/doctor", nil, nil, &rep)
	}
	if err != nil {
		say(io.Err, "senclaw doctor: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, rep)
	} else {
		printReport(rep, io)
	}
	if rep.Restart && restarted != nil {
		nc, err := restarted()
		if err != nil {
			say(io.Err, "senclaw doctor: the daemon did not start again on the repaired store: %v", err)
			return ExitFailure
		}
		if !jsonOut {
			say(io.Out, "the daemon runs again, on the repaired store")
		}
		var after doctor.Report
		if err := nc.Do(ctx, http.MethodGet, "/doctor", nil, nil, &after); err == nil && !jsonOut {
			printReport(after, io)
			rep.OK = after.OK
		}
	}
	if !rep.OK {
		return ExitFailure
	}
	return 0
}

func printReport(rep doctor.Report, io IO) {
	for _, line := range rep.Repaired {
		say(io.Out, "repaired  %s", line)
	}
	for _, c := range rep.Checks {
		say(io.Out, "%-5s %-13s %s", c.Status, c.Name, c.Detail)
		if c.Fix != "" {
			say(io.Out, "%s fix: %s", strings.Repeat(" ", 19), c.Fix)
		}
	}
}
