package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/safetext"
)

func doctorCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "doctor [--repair] [--json]", Short: "check the store, the data dir, the isolation tools and leftovers; --repair fixes what it can",
		Long: "Each check says how it stands and what to do. --repair copies what can be read of a damaged store into a new file " +
			"(keeping the damaged one) and starts the daemon again on it, or removes the processes, cgroups, containers and one-shot " +
			"workspaces that no sandbox or run owns, and says what it did. Workspaces of sandboxes deleted without --purge are listed, never removed. " +
			"It works while the store is damaged (the daemon answers it). Exit code: 0, or 1 when a check failed.",
		Example: examples("senclaw doctor", "senclaw doctor --repair"),
	}
	repair := cmd.Flags().Bool("repair", false, "repair what can be: a damaged store, leftovers no sandbox owns")
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.action(func(args []string) int {
		if len(args) > 0 {
			fmt.Fprintf(x.io.Err, "senclaw doctor: unexpected arguments %q; see senclaw doctor -h\n", args)
			return ExitUsage
		}
		d, err := x.dirs()
		if err != nil {
			fmt.Fprintln(x.io.Err, "senclaw:", err)
			return ExitFailure
		}
		// The doctor is what a daemon whose engine cannot start still answers.
		c, err := x.connect(x.ctx, d, x.io.Err)
		if client.IsUntrusted(err) {
			// The daemon cannot be reached safely: this check is the
			// CLI's own, and what to do is in the reason.
			fmt.Fprintf(x.io.Out, "%-5s %-13s %s\n", "fail", "runtime dir", safetext.Escape(err.Error()))
			return ExitFailure
		}
		if err != nil && !errors.As(err, new(*engineUnavailable)) {
			fmt.Fprintln(x.io.Err, "senclaw:", err)
			return ExitFailure
		}
		restarted := func() (*client.Client, error) {
			sock := apitype.SocketPath(d.Runtime)
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(sock); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					return nil, errors.New("the daemon did not stop within 20 s")
				}
			}
			return x.connect(x.ctx, d, x.io.Err)
		}
		return doctor(x.ctx, c, *repair, *jsonOut, restarted, x.io)
	})
	return cmd
}

// doctor executes `senclaw doctor [--repair]`: what the daemon's doctor
// found, each check with what to do, and with repair what it did. It
// exits 1 when a check failed. restarted, when the repair replaced the
// store, waits for the daemon to stop and starts it again, and says how
// it stands then.
func doctor(ctx context.Context, c *client.Client, repair, jsonOut bool, restarted func() (*client.Client, error), io streams) int {
	var rep apitype.DoctorReport
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
		var after apitype.DoctorReport
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

func printReport(rep apitype.DoctorReport, io streams) {
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
