package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
)

// ShellOptions are the flags and the surroundings of `senclaw shell`.
// main fills them in: it alone reads the environment.
type ShellOptions struct {
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
	Argv        []string             `json:"argv"`
	Env         map[string]string    `json:"env,omitempty"`
	TimeoutMs   int                  `json:"timeoutMs,omitempty"`
	Source      string               `json:"source"`
	Terminal    *app.TerminalRequest `json:"terminal,omitempty"`
	Interactive bool                 `json:"interactive"`
}

// Shell executes `senclaw shell`, as docker exec -it does: the command
// (by default the sandbox's shell) runs in the persistent sandbox through
// the runner, with all of its confinement, attached to this process: a
// terminal inside where this one has terminals (its size follows, keys
// go through raw), stdin, the signals this process gets, and its exit
// code. 124 on timeout, 126 when refused (the reason on stderr), 2 for
// bad input.
func Shell(ctx context.Context, c *client.Client, o ShellOptions) int {
	body := shellBody{Argv: o.Argv, Source: app.SourceCLI, Interactive: true}
	if len(body.Argv) == 0 {
		body.Argv = []string{"/bin/sh", "-c", interactiveShell}
	}
	if o.Timeout > 0 {
		body.TimeoutMs = int(o.Timeout / time.Millisecond)
	}
	extra, err := ParseEnv(o.Env)
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
