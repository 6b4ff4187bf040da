// The agent shell's commands: agent-shell itself, the hooks agents call,
// and integrate, which installs them.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/api"
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
			timeout := fs.Duration("timeout", 0, "kill the command after this `DURATION` (1s to 10m, e.g. 90s, 2m; default: the agent sandbox's 3m, 10m for an interactive shell)")
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
				d, err := x.dirs()
				if err != nil {
					fmt.Fprintln(x.io.Err, "senclaw:", err)
					return cli.ExitFailure
				}
				o.Redial = func() (*client.Client, error) { return connectDaemon(x.ctx, d.runtime, x.dataDir, x.io.Err) }
				return cli.AgentShell(x.ctx, client.DialSocket(api.SocketPath(d.runtime)), o)
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

func hookCommand() *command {
	verb := func(agent, env, tool string) *command {
		return &command{
			name: agent, summary: "the " + agent + " hook: route its " + tool + " tool through agent-shell",
			args: "< HOOK_JSON",
			about: "Reads the hook's JSON on stdin and prints the answer: the tool's command rewritten to run through senclaw agent-shell -c " +
				"in the session's project (" + env + " when the cwd lies in it, else the cwd), the original kept byte for byte; or a denial " +
				"with the reason when the agent shell would refuse it or the engine cannot be reached. Other tools pass untouched.",
			examples: []string{
				`echo '{"hook_event_name":"` + map[string]string{agentshell.ClaudeCode: "PreToolUse", agentshell.GeminiCLI: "BeforeTool"}[agent] + `","cwd":"'$PWD'","tool_name":"` + tool + `","tool_input":{"command":"ls"}}' | senclaw hook ` + agent,
				"senclaw integrate " + agent + "   # installs it",
			},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				return func(args []string) int {
					if len(args) > 0 {
						fmt.Fprintf(x.io.Err, "senclaw hook %s: it takes no arguments, got %q (the hook's JSON comes on stdin)\n", agent, args)
						return cli.ExitUsage
					}
					self := selfPath()
					if self == "" {
						fmt.Fprintln(x.io.Err, "senclaw hook: cannot find this senclaw executable's path")
						return cli.ExitFailure
					}
					connect := func(ctx context.Context) (*client.Client, error) {
						d, err := x.dirs()
						if err != nil {
							return nil, err
						}
						return connectDaemon(ctx, d.runtime, x.dataDir, io.Discard)
					}
					return cli.Hook(x.ctx, cli.HookOptions{Agent: agent, ProjectDir: os.Getenv(env), Senclaw: self, Connect: connect, Stdin: os.Stdin, IO: x.io})
				}
			},
		}
	}
	return &command{
		name: "hook", summary: "the hooks agents call before a shell command (installed by senclaw integrate)",
		args:     "claude-code|gemini-cli < HOOK_JSON",
		about:    "Agents run these, not people: senclaw integrate puts them in the agents' settings. They are listed so that you can see what an integration installs.",
		examples: []string{"senclaw hook claude-code -h", "senclaw integrate claude-code --dry-run"},
		sub: []*command{
			verb(agentshell.ClaudeCode, "CLAUDE_PROJECT_DIR", "Bash"),
			verb(agentshell.GeminiCLI, "GEMINI_PROJECT_DIR", "run_shell_command"),
		},
	}
}

func integrateCommand() *command {
	verb := func(agent, summary, where string, examples ...string) *command {
		return &command{
			name: agent, summary: summary,
			args:     "[--user | --project DIR] [--remove] [--dry-run] [--yes]",
			about:    where + " It shows the change first, keeps the file's other content, does nothing when already installed, and --remove undoes it. senclaw policy shows where integrations are installed.",
			examples: examples,
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				user := fs.Bool("user", false, "install for every project of this user (the default)")
				project := fs.String("project", "", "install for the project `DIR` only")
				remove := fs.Bool("remove", false, "remove the integration")
				dryRun := fs.Bool("dry-run", false, "show the change and write nothing")
				yes := fs.Bool("yes", false, "do not ask before writing (asked only on a terminal)")
				return func(args []string) int {
					if len(args) > 0 {
						fmt.Fprintf(x.io.Err, "senclaw integrate %s: unexpected arguments %q\n", agent, args)
						return cli.ExitUsage
					}
					if *user && *project != "" {
						fmt.Fprintf(x.io.Err, "senclaw integrate %s: give --user or --project DIR, not both\n", agent)
						return cli.ExitUsage
					}
					d, err := x.dirs()
					if err != nil {
						fmt.Fprintln(x.io.Err, "senclaw:", err)
						return cli.ExitFailure
					}
					self := selfPath()
					if self == "" {
						fmt.Fprintln(x.io.Err, "senclaw integrate: cannot find this senclaw executable's path")
						return cli.ExitFailure
					}
					o := cli.IntegrateOptions{Agent: agent, Home: d.home, DataDir: d.data, Senclaw: self, Remove: *remove, DryRun: *dryRun}
					if *project != "" {
						if o.Project, err = filepath.Abs(*project); err != nil {
							fmt.Fprintln(x.io.Err, "senclaw integrate:", err)
							return cli.ExitUsage
						}
					}
					if !*yes && cli.IsTerminal(os.Stdin) {
						o.Confirm = cli.AskYes(os.Stdin, x.io.Out)
					}
					return cli.Integrate(o, x.io)
				}
			},
		}
	}
	shell := verb(agentshell.Shell, "write the senclaw-agent-shell wrapper, for programs that run $SHELL",
		"Writes the wrapper into bin/ of senclaw's data dir; set SHELL to it for any agent or tool that runs its commands with $SHELL -c.",
		"senclaw integrate shell", "senclaw integrate shell --remove")
	return &command{
		name: "integrate", summary: "turn an agent's shell over to the agent shell (claude-code, gemini-cli, shell)",
		args:  "claude-code|gemini-cli|shell [--user | --project DIR] [--remove]",
		about: "Once integrated, the agent's shell commands go through senclaw agent-shell, and the Agent shell switch (senclaw policy, the tray, the dashboard) decides where they run: sandboxed in the project, or directly on the host.",
		examples: []string{
			"senclaw integrate claude-code",
			"senclaw integrate gemini-cli --project ~/src/app --remove",
		},
		sub: []*command{
			verb(agentshell.ClaudeCode, "add senclaw's PreToolUse hook for the Bash tool to Claude Code's settings",
				"Edits ~/.claude/settings.json (--user) or DIR/.claude/settings.local.json (--project DIR, the file Claude Code keeps out of git).",
				"senclaw integrate claude-code", "senclaw integrate claude-code --project . --remove"),
			verb(agentshell.GeminiCLI, "add senclaw's BeforeTool hook for run_shell_command to Gemini CLI's settings",
				"Edits ~/.gemini/settings.json (--user) or DIR/.gemini/settings.json (--project DIR), and turns on tools.enableHooks.",
				"senclaw integrate gemini-cli", "senclaw integrate gemini-cli --dry-run"),
			shell,
		},
	}
}
