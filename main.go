// GOMAXPROCS is the machine's CPU count, not the cgroup's quota: a CLI
// process makes a request or two, and reading /proc/self/mountinfo for
// the quota at every start costs about 0.1 ms, more with many mounts.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command senclaw runs AI agents' commands and code in an OS sandbox.
//
// It is the command line (app/cli), and shows and controls what runs;
// it links nothing of the engine: the commands that host the engine exec
// senclaw-engine, found next to it.
package main

import (
	"os"

	"github.com/senclaw/sandbox/app/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Env{LookupEnv: os.LookupEnv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Argv0: os.Args[0]}))
}
