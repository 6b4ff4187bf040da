// Command senclaw runs AI agents' shell commands and code inside an
// operating-system sandbox, and shows and controls what runs.
//
// This file only reads flags and the environment, builds the engine and
// hands it to the face the subcommand asks for.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/envexec"
	"github.com/senclaw/sandbox/backends/idmap"
	"github.com/senclaw/sandbox/backends/landlock"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == envexec.Arg {
		// The launcher a traced direct run's command starts through
		// (backends/envexec); it execs the command or fails.
		os.Exit(envexec.Main(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == direct.ReaperArg {
		// The child subreaper of a direct run (backends/direct).
		os.Exit(direct.RunReaper(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == idmap.Arg {
		// The launcher of a bwrap run with idmapped mounts (backends/idmap).
		os.Exit(idmap.Main(os.Args[2:]))
	}
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == landlock.HelperCommand {
		return landlock.RunHelper() // the engine's Landlock helper: first, before any flag
	}
	global := flag.NewFlagSet("senclaw", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	dataDir := global.String("data-dir", "", "where the database and workspaces live")
	verbose := global.Bool("v", false, "log what the engine does, and every detail of the notes, to stderr")
	showVersion := global.Bool("version", false, "print the version")
	cmds := commands()
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printOverview(stdout, cmds)
			return 0
		}
		fmt.Fprintf(stderr, "senclaw: %v (global flags: --data-dir DIR, -v, --version; senclaw help lists the commands)\n", err)
		return cli.ExitUsage
	}
	if *showVersion {
		fmt.Fprintln(stdout, versionLine())
		return 0
	}
	args = global.Args()
	if len(args) == 0 {
		args = []string{"desktop"} // no command: the desktop app (runDesktop)
	}
	if args[0] == "help" {
		if len(args) == 1 {
			printOverview(stdout, cmds)
			return 0
		}
		// senclaw help CMD [VERB] is senclaw CMD [VERB] -h.
		args = append(args[1:], "-h")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return dispatch(cmds, "", args, newInvocation(ctx, *dataDir, *verbose, stdout, stderr))
}
