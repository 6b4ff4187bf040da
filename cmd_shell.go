// senclaw shell: a terminal inside a persistent sandbox.

package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
)

func shellCommand() *command {
	return &command{
		name: "shell", summary: "open a terminal inside a persistent sandbox, as docker exec -it does",
		args: "[--timeout DURATION] [--env K=V] ID [-- CMD ARGS...]",
		about: "ID is the sandbox's id or its unique name (senclaw ls). The command, by default the sandbox's shell (bash when it has one, " +
			"else sh), runs through the runner like any run, with all of the sandbox's confinement (filesystem, network, limits, seccomp: " +
			"nothing can be pushed into this terminal), and is recorded with source cli, interactive. Where this process has a terminal, " +
			"the command gets one inside, of this one's size as it changes, with every key passed through (^C goes to the command); " +
			"SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process reach it too. It runs until it exits (no deadline unless --timeout); " +
			"the exit code is the command's, 124 on timeout, 126 when refused (the reason is on stderr), 2 for bad input.",
		examples: []string{
			"senclaw shell build",
			"senclaw shell 3f9c2a -- python3",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			var timeout time.Duration
			fs.Var(durationFlag{&timeout, time.Second}, "timeout", "end the session after this `DURATION` (1s to 10m, e.g. 90s, 2m; default: none)")
			var env stringList
			fs.Var(&env, "env", "an environment variable for the command, `K=V` (repeatable)")
			return func(args []string) int {
				if len(args) == 0 {
					fmt.Fprintln(x.io.Err, "senclaw shell: give the sandbox's id or name (senclaw ls lists them); usage: senclaw shell [flags] ID [-- CMD ARGS...]")
					return cli.ExitUsage
				}
				if timeout > 10*time.Minute {
					fmt.Fprintf(x.io.Err, "senclaw shell: --timeout %s: give 1s to 10m\n", timeout)
					return cli.ExitUsage
				}
				argv := args[1:]
				if len(argv) > 0 && argv[0] == "--" {
					argv = argv[1:]
				}
				o := cli.ShellOptions{Sandbox: args[0], Argv: argv, Timeout: timeout, Env: env, Environ: environ(),
					Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
				return x.withClient(func(c *client.Client) int { return cli.Shell(x.ctx, c, o) })
			}
		},
	}
}
