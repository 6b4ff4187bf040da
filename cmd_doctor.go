// `senclaw doctor`: the engine's health, what it left, and repairs.

package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
)

func doctorCommand() *command {
	return &command{
		name: "doctor", summary: "check the store, the data dir, the isolation tools and leftovers; --repair fixes what it can",
		args: "[--repair] [--json]",
		about: "Each check says how it stands and what to do. --repair copies what can be read of a damaged store into a new file " +
			"(keeping the damaged one) and starts the daemon again on it, or removes the processes, cgroups, containers and one-shot " +
			"workspaces that no sandbox or run owns, and says what it did. Workspaces of sandboxes deleted without --purge are listed, never removed. " +
			"It works while the store is damaged (the daemon answers it). Exit code: 0, or 1 when a check failed.",
		examples: []string{"senclaw doctor", "senclaw doctor --repair"},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			repair := fs.Bool("repair", false, "repair what can be: a damaged store, leftovers no sandbox owns")
			jsonOut := jsonFlag(fs)
			return func(args []string) int {
				if len(args) > 0 {
					fmt.Fprintf(x.io.Err, "senclaw doctor: unexpected arguments %q; see senclaw doctor -h\n", args)
					return cli.ExitUsage
				}
				d, err := x.dirs()
				if err != nil {
					fmt.Fprintln(x.io.Err, "senclaw:", err)
					return cli.ExitFailure
				}
				// The doctor is what a daemon whose engine cannot start still answers.
				c, err := connectDaemon(x.ctx, d.runtime, x.dataDir, x.io.Err)
				if err != nil && !errors.As(err, new(*engineUnavailable)) {
					fmt.Fprintln(x.io.Err, "senclaw:", err)
					return cli.ExitFailure
				}
				restarted := func() (*client.Client, error) {
					sock := api.SocketPath(d.runtime)
					for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
						if _, err := os.Stat(sock); os.IsNotExist(err) {
							break
						}
						if time.Now().After(deadline) {
							return nil, errors.New("the daemon did not stop within 20 s")
						}
					}
					return connectDaemon(x.ctx, d.runtime, x.dataDir, x.io.Err)
				}
				return cli.Doctor(x.ctx, c, *repair, *jsonOut, restarted, x.io)
			}
		},
	}
}
