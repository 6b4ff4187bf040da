// The agent shell's commands: agent-shell itself, the hooks agents call,
// and integrate, which installs them.

package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
)

func agentShellCommand() *command {
	return &command{
		name: "agent-shell", summary: "run a command as an agent's shell does, under the Agent shell switch",
		args: "[--project DIR] [--agent NAME] [--timeout DURATION] (-c 'COMMAND LINE' [ARG0 ARGS...] | -- CMD ARGS... | nothing: an interactive shell)",
		about: "With the Agent shell switch on, the command runs in the project's sandbox (agent:<name of the dir>, one per project, " +
			"listed by senclaw ls): it may write only the project and its own /tmp, reads per the Disk read field, and gets the network " +
			"and loopback ports of the policy; when nothing can isolate it is refused, never run unconfined. With the switch off it runs " +
			"directly on the host with this environment (its run says isolation none). Either way it behaves as sh -c: stdin, stdout, " +
			"stderr and the exit code pass through, output streams, a terminal inside where this one has terminals (its size follows), " +
			"and SIGINT, SIGTERM, SIGHUP and SIGQUIT reach the command. It reads stdin while the command runs, as ssh does: give it " +
			"< /dev/null in a `while read` loop. Exit code: the command's, 124 on timeout, 126 when refused (the reason is on stderr), " +
			"2 for bad input. The run is recorded with source agent-shell (senclaw runs).",
		examples: []string{
			"senclaw agent-shell -c 'npm install && npm test'",
			"senclaw agent-shell --project ~/src/app -- make -j4",
			"SHELL=~/.local/share/senclaw/bin/senclaw-agent-shell some-agent   # see senclaw integrate shell",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			project := fs.String("project", "", "the project `DIR` the command may write (default: the current directory)")
			agent := fs.String("agent", "", "the agent's `NAME` for the run's record: lowercase letters, digits and dashes (claude-code, gemini-cli, shell)")
			timeout := fs.Duration("timeout", 0, "kill the command after this `DURATION` (1s to 10m, e.g. 90s, 2m; default: the agent sandbox's 3m)")
			cmdLine := fs.String("c", "", "the `COMMAND LINE` to run, as sh -c takes it; the arguments after it are $0, $1, ...")
			return func(args []string) int {
				wd, err := os.Getwd()
				if err != nil {
					fmt.Fprintln(x.io.Err, "senclaw agent-shell: the current directory:", err)
					return cli.ExitFailure
				}
				o := cli.AgentShellOptions{Project: *project, Dir: wd, Agent: *agent, Timeout: *timeout,
					Env: environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
				if o.Project == "" {
					o.Project = wd
				}
				if flagGiven(fs, "c") {
					o.Command, o.Args = cmdLine, args
				} else {
					o.Argv = args
				}
				if *timeout != 0 && (*timeout < time.Second || *timeout > 10*time.Minute) {
					fmt.Fprintf(x.io.Err, "senclaw agent-shell: --timeout %s: give 1s to 10m\n", *timeout)
					return cli.ExitUsage
				}
				return x.withClient(func(c *client.Client) int { return cli.AgentShell(x.ctx, c, o) })
			}
		},
	}
}

// environ is this process's environment as a map.
func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}
