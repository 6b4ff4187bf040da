// Command senclaw-engine is the engine's executable, which senclaw runs.
//
// It is the daemon (serve, the desktop app's engine and tray), the MCP
// stdio server, and the helpers the engine starts as itself. People run
// senclaw, which execs senclaw-engine (as the same process,
// shown as senclaw) for the commands that host the engine, and starts it
// for a daemon when none answers; senclaw itself links none of the
// engine, so that it starts in about a millisecond. senclaw-engine takes
// senclaw's command line (cli.Main, with the engine in this process), and
// first the helper table's (reexec): the envexec launcher, the direct
// backend's subreaper, the idmap launcher and the Landlock helper. make
// build puts it next to senclaw; make install in ../lib/senclaw.
package main

import (
	"os"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/daemon"
	"github.com/senclaw/sandbox/backends/reexec"
)

func main() {
	reexec.Init()
	os.Exit(cli.Main(os.Args[1:], cli.Env{LookupEnv: os.LookupEnv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Argv0: os.Args[0], Hosting: daemon.Hosting{}}))
}
