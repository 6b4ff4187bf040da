package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func shellCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "shell [--timeout DURATION] [--env K=V] ID [-- CMD ARGS...]", Short: "open a terminal inside a persistent sandbox, as docker exec -it does",
		Long: "ID is the sandbox's id or its unique name (senclaw ls). The command, by default the sandbox's shell (bash when it has one, " +
			"else sh), runs through the runner like any run, with all of the sandbox's confinement (filesystem, network, limits, seccomp: " +
			"nothing can be pushed into this terminal), and is recorded with source cli, interactive. Where this process has a terminal, " +
			"the command gets one inside, of this one's size as it changes, with every key passed through (^C goes to the command); " +
			"SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process reach it too. It runs until it exits (no deadline unless --timeout); " +
			"the exit code is the command's, 124 on timeout, 126 when refused (the reason is on stderr), 2 for bad input.",
		Example: examples(
			"senclaw shell build",
			"senclaw shell 3f9c2a -- python3",
		),
	}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	var timeout time.Duration
	fs.Var(durationFlag{&timeout, time.Second}, "timeout", "end the session after this `DURATION` (1s to 10m, e.g. 90s, 2m; default: none)")
	var env stringList
	fs.Var(&env, "env", "an environment variable for the command, `K=V` (repeatable)")
	cmd.RunE = x.action(func(args []string) int {
		if len(args) == 0 {
			fmt.Fprintln(x.io.Err, "senclaw shell: give the sandbox's id or name (senclaw ls lists them); usage: senclaw shell [flags] ID [-- CMD ARGS...]")
			return ExitUsage
		}
		if timeout > 10*time.Minute {
			fmt.Fprintf(x.io.Err, "senclaw shell: --timeout %s: give 1s to 10m\n", timeout)
			return ExitUsage
		}
		argv := args[1:]
		if len(argv) > 0 && argv[0] == "--" {
			argv = argv[1:]
		}
		o := shellOptions{Sandbox: args[0], Argv: argv, Timeout: timeout, Env: env, Environ: x.environ(),
			Stdin: x.env.Stdin, Stdout: x.stdoutFile(), Stderr: x.stderrFile()}
		return x.withClient(func(c *client.Client) int { return shell(x.ctx, c, o) })
	})
	return cmd
}

// shellOptions are the flags and the surroundings of `senclaw shell`.
// main fills them in: it alone reads the environment.
type shellOptions struct {
	// Sandbox is the sandbox's id or unique name.
	Sandbox string
	// Argv is the command after --; none: the sandbox's shell (bash when
	// it has one, else sh).
	Argv []string
	// Timeout kills the session after this long; 0: none, it ends when
	// the command exits or this process goes away.
	Timeout time.Duration
	// Env are K=V variables for the command, after the terminal's own.
	Env []string
	// Environ is the caller's environment, of which the command gets the
	// terminal's variables (TERM, ...).
	Environ map[string]string
	// Stdin, Stdout and Stderr are the caller's own, so that terminals
	// among them are seen as terminals.
	Stdin, Stdout, Stderr *os.File
}

// shellBody is the body of an attached POST /sandboxes/{id}/exec.
type shellBody struct {
	Argv        []string                 `json:"argv"`
	Env         map[string]string        `json:"env,omitempty"`
	TimeoutMs   int                      `json:"timeoutMs,omitempty"`
	Source      string                   `json:"source"`
	Terminal    *apitype.TerminalRequest `json:"terminal,omitempty"`
	Interactive bool                     `json:"interactive"`
}

// shell executes `senclaw shell`, as docker exec -it does: the command
// (by default the sandbox's shell) runs in the persistent sandbox through
// the runner, with all of its confinement, attached to this process: a
// terminal inside where this one has terminals (its size follows, keys
// go through raw), stdin, the signals this process gets, and its exit
// code. 124 on timeout, 126 when refused (the reason on stderr), 2 for
// bad input.
func shell(ctx context.Context, c *client.Client, o shellOptions) int {
	body := shellBody{Argv: o.Argv, Source: apitype.SourceCLI, Interactive: true}
	if len(body.Argv) == 0 {
		body.Argv = []string{"/bin/sh", "-c", interactiveShell}
	}
	if o.Timeout > 0 {
		body.TimeoutMs = int(o.Timeout / time.Millisecond)
	}
	extra, err := parseEnv(o.Env)
	if err != nil {
		fmt.Fprintln(o.Stderr, "senclaw shell:", err)
		return ExitUsage
	}
	caller := newCaller(o.Stdin, o.Stdout, o.Stderr)
	caller.noteNoTerminal = true
	if body.Terminal = caller.terminal(); body.Terminal != nil {
		body.Env = terminalEnv(o.Environ)
	}
	if len(extra) > 0 && body.Env == nil {
		body.Env = map[string]string{}
	}
	for k, v := range extra {
		body.Env[k] = v
	}
	// The session outlives this process's own ^C, which goes to the
	// command inside.
	sess, err := c.Attach(context.WithoutCancel(ctx), "/sandboxes/"+url.PathEscape(o.Sandbox)+"/exec", body)
	if err != nil {
		fmt.Fprintln(o.Stderr, "senclaw shell:", err)
		return exitFor(err)
	}
	return caller.drive(sess, "senclaw shell")
}
