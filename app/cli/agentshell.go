package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func agentShellCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent-shell [--project DIR] [--agent NAME] [--timeout DURATION] (-c 'COMMAND LINE' [ARG0 ARGS...] | -- CMD ARGS... | nothing: an interactive shell)",
		Short: "run a command as an agent's shell does, under the Agent shell switch",
		Long: "With the Agent shell switch on, the command runs in the project's sandbox (agent:<name of the dir>, one per project, " +
			"listed by senclaw ls): it may write only the project and its own /tmp, reads per the Disk read field, and gets the network " +
			"and loopback ports of the policy; when nothing can isolate it is refused, never run unconfined. With the switch off it runs " +
			"directly on the host with this environment (its run says isolation none). Either way it behaves as sh -c: stdin, stdout, " +
			"stderr and the exit code pass through, output streams, a terminal inside where this one has terminals (its size follows), " +
			"and SIGINT, SIGTERM, SIGHUP and SIGQUIT reach the command. It reads stdin while the command runs, as ssh does: give it " +
			"< /dev/null in a `while read` loop. Exit code: the command's, 124 on timeout, 126 when refused (the reason is on stderr), " +
			"2 for bad input. The run is recorded with source agent-shell (senclaw runs).",
		Example: examples(
			"senclaw agent-shell -c 'npm install && npm test'",
			"senclaw agent-shell --project ~/src/app -- make -j4",
			"SHELL=~/.local/share/senclaw/bin/senclaw-agent-shell some-agent   # see senclaw integrate shell",
		),
	}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	project := fs.String("project", "", "the project `DIR` the command may write (default: the current directory)")
	agent := fs.String("agent", "", "the agent's `NAME` for the run's record: lowercase letters, digits and dashes (claude-code, gemini-cli, shell)")
	timeout := fs.Duration("timeout", 0, "kill the command after this `DURATION` (1s to 10m, e.g. 90s, 2m; default: the agent sandbox's 3m, with the Agent shell off exec.hostTimeoutSeconds (60s, and at most that for an agent), 10m for an interactive shell)")
	cmdLine := fs.StringP("command", "c", "", "the `COMMAND LINE` to run, as sh -c takes it; the arguments after it are $0, $1, ...")
	cmd.RunE = x.action(func(args []string) int {
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(x.io.Err, "senclaw agent-shell: the current directory:", err)
			return ExitFailure
		}
		o := agentShellOptions{Project: *project, Dir: wd, Agent: *agent, Timeout: *timeout,
			Env: x.environ(), Stdin: x.env.Stdin, Stdout: x.stdoutFile(), Stderr: x.stderrFile()}
		if o.Project == "" {
			o.Project = wd
		}
		if fs.Changed("command") {
			o.Command, o.Args = cmdLine, args
		} else {
			o.Argv = args
		}
		if *timeout != 0 && (*timeout < time.Second || *timeout > 10*time.Minute) {
			fmt.Fprintf(x.io.Err, "senclaw agent-shell: --timeout %s: give 1s to 10m\n", *timeout)
			return ExitUsage
		}
		d, err := x.dirs()
		if err != nil {
			fmt.Fprintln(x.io.Err, "senclaw:", err)
			return ExitFailure
		}
		// Agents run it (their hooks, SHELL): it acts as the agent token
		// of its agent, never as the owner. The first try sends the token
		// kept in the config dir as it is; a daemon that does not answer,
		// or no longer takes it, is redialled and the token made again.
		face := "agent-shell:" + cmp.Or(*agent, agentshell.Shell)
		o.Redial = func() (*client.Client, error) {
			c, err := x.connect(x.ctx, d, x.io.Err)
			if err != nil {
				return nil, err
			}
			return x.asAgent(c, face, "")
		}
		c := x.withToken(client.DialSocket(apitype.SocketPath(d.Runtime)))
		if c.Token() == "" {
			kept := keptToken(d.Config, face)
			if kept == "" {
				if c, err = o.Redial(); err != nil {
					fmt.Fprintln(x.io.Err, "senclaw agent-shell:", err)
					if errors.As(err, new(*engineUnavailable)) {
						return ExitRefused
					}
					return exitFor(err)
				}
			} else {
				c = c.WithToken(kept)
			}
		}
		return agentShell(x.ctx, c, o)
	})
	return cmd
}

// environ is this process's environment as a map.
func (x *invocation) environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// agentShellOptions are the flags and the surroundings of `senclaw
// agent-shell`. main fills them in: it alone reads the environment and
// the working directory.
type agentShellOptions struct {
	// Project is the directory the command may write (--project, else
	// the working directory); Dir is the working directory itself.
	Project, Dir string
	// Command is the -c line, with Args after it ($0, $1, ... as sh -c
	// gives them); Argv the command after --. Neither: an interactive
	// shell.
	Command    *string
	Args, Argv []string
	Agent      string
	Timeout    time.Duration
	// Env is the caller's environment: the sandboxed command gets only
	// its terminal's variables (TERM, ...); the off path runs with all
	// of it, as the command would have run on the host.
	Env map[string]string
	// Stdin, Stdout and Stderr are the caller's own, so that terminals
	// among them are seen as terminals.
	Stdin, Stdout, Stderr *os.File
	// Redial reaches the daemon when the client given answers nothing:
	// it starts one. The first try skips the health check that other
	// commands make, which is a round trip on every agent command.
	Redial func() (*client.Client, error)
}

// interactiveShell is what runs when no command is given.
const interactiveShell = `if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi`

// terminalVars are the caller's variables a sandboxed command with a
// terminal is given, so that programs draw it right.
var terminalVars = []string{"TERM", "COLORTERM", "NO_COLOR", "LANG", "LC_ALL"}

// agentShell executes `senclaw agent-shell` as sh -c would run the
// command: stdin, stdout, stderr and the exit code passed through, output
// streamed, a terminal inside on the descriptors that are terminals here,
// its size kept in step, and the signals this process gets passed to the
// command. The exit code is the command's, 124 on timeout, 126 when the
// run was refused (the reason on stderr), 2 for bad input.
func agentShell(ctx context.Context, c *client.Client, o agentShellOptions) int {
	body := agentShellBody{ProjectDir: o.Project, Dir: o.Dir, Agent: o.Agent, HostEnv: o.Env}
	if o.Timeout > 0 {
		body.TimeoutMs = int(o.Timeout / time.Millisecond)
	}
	switch {
	case o.Command != nil && len(o.Args) == 0 && *o.Command != "":
		body.Command = *o.Command
	case o.Command != nil:
		body.Argv = append([]string{"/bin/sh", "-c", *o.Command}, o.Args...)
	case len(o.Argv) > 0:
		body.Argv = o.Argv
	default:
		body.Argv = []string{"/bin/sh", "-c", interactiveShell}
		if body.TimeoutMs == 0 {
			// A person at a shell: as long as a person's run at a terminal.
			body.TimeoutMs = int(TerminalTimeout / time.Millisecond)
		}
	}
	caller := newCaller(o.Stdin, o.Stdout, o.Stderr)
	if body.Terminal = caller.terminal(); body.Terminal != nil {
		body.Env = terminalEnv(o.Env)
	}
	// The session outlives the command's own ^C: that is the command's to
	// handle, and this process passes it on.
	ctx = context.WithoutCancel(ctx)
	sess, err := c.Attach(ctx, "/agent-shell", body)
	if (client.IsUnavailable(err) || isUnauthorized(err)) && o.Redial != nil {
		if c, err = o.Redial(); err == nil {
			sess, err = c.Attach(ctx, "/agent-shell", body)
		}
	}
	if err != nil {
		fmt.Fprintln(o.Stderr, "senclaw agent-shell:", err)
		return exitFor(err)
	}
	return caller.drive(sess, "senclaw agent-shell")
}

// terminalEnv is what of the caller's environment env a command with a
// terminal gets: its terminal's variables.
func terminalEnv(env map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range terminalVars {
		if v, ok := env[k]; ok {
			out[k] = v
		}
	}
	return out
}

// caller is this process's end of an attached run (agent-shell, shell):
// its standard descriptors and which of them are terminals.
type caller struct {
	stdin, stdout, stderr *os.File
	fds                   []int
	// ttyOut is the terminal whose size the run's follows.
	ttyOut *os.File
	// noteNoTerminal says so on stderr when the backend gave no terminal
	// although this process has one (senclaw shell).
	noteNoTerminal bool
}

func newCaller(stdin, stdout, stderr *os.File) *caller {
	c := &caller{stdin: stdin, stdout: stdout, stderr: stderr, ttyOut: stdout}
	for fd, f := range []*os.File{stdin, stdout, stderr} {
		if f != nil && isTerminal(f) {
			c.fds = append(c.fds, fd)
		}
	}
	if !slices.Contains(c.fds, 1) {
		c.ttyOut = stderr
	}
	return c
}

// terminal asks for a terminal inside on the descriptors that are
// terminals here, of this one's size; nil when neither stdout nor stderr
// is one.
func (c *caller) terminal() *apitype.TerminalRequest {
	if !slices.Contains(c.fds, 1) && !slices.Contains(c.fds, 2) {
		return nil
	}
	cols, rows := terminalSize(c.ttyOut)
	if cols == 0 || rows == 0 {
		cols, rows = 80, 24
	}
	return &apitype.TerminalRequest{Cols: cols, Rows: rows, FDs: c.fds}
}

// drive runs the attached session as sh -c would run the command: stdin
// passed on (this terminal raw while the one inside has it), output
// written, the terminal's size kept in step, the signals this process
// gets passed to the command, and its exit code returned: 124 on
// timeout, 126 when refused, the reason on stderr after name.
func (c *caller) drive(sess *client.Session, name string) int {
	defer sess.Close()
	var restore func()
	var restoreOnce sync.Once
	undo := func() {
		restoreOnce.Do(func() {
			if restore != nil {
				restore()
			}
		})
	}
	defer undo()
	var mu sync.Mutex
	var forwarded os.Signal
	sigs := make(chan os.Signal, 8)
	watch := []os.Signal{}
	for s := range forwardedSignals {
		watch = append(watch, s)
	}
	if resizeSignal != nil {
		watch = append(watch, resizeSignal)
	}
	signal.Notify(sigs, watch...)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			if s == resizeSignal {
				if cols, rows := terminalSize(c.ttyOut); cols > 0 && rows > 0 {
					_ = sess.Control(apitype.Control{Cols: cols, Rows: rows})
				}
				continue
			}
			mu.Lock()
			forwarded = s
			mu.Unlock()
			_ = sess.Control(apitype.Control{Signal: forwardedSignals[s]})
		}
	}()
	started := func(rec apitype.RunRecord) {
		if rec.Terminal && slices.Contains(c.fds, 0) {
			if r, err := makeRaw(c.stdin); err == nil {
				restore = r
			}
		}
		if c.noteNoTerminal && !rec.Terminal && len(c.fds) > 0 {
			for _, m := range rec.Missing {
				if strings.HasPrefix(m, "terminal: ") {
					fmt.Fprintf(c.stderr, "%s: note: %s\n", name, m)
				}
			}
		}
	}
	go pumpStdin(c.stdin, sess)
	res, err := sess.Wait(client.Events{Stdout: c.stdout, Stderr: c.stderr, Started: started})
	undo()
	if err != nil {
		fmt.Fprintln(c.stderr, name+":", err)
		return runErrorExit(err)
	}
	rec := res.Run
	switch {
	case rec.TimedOut:
		fmt.Fprintf(c.stderr, "%s: the command timed out after %d ms\n", name, rec.DurationMs)
		return ExitTimeout
	case rec.ExitCode == nil:
		fmt.Fprintln(c.stderr, name+": the command failed:", rec.Error)
		return ExitFailure
	}
	code := *rec.ExitCode
	mu.Lock()
	sig := forwarded
	mu.Unlock()
	if sig != nil && code == 128+signalNumber(sig) {
		dieBy(sig) // the command died of the signal passed on: so does this
	}
	return code
}

// agentShellBody is the body of POST /agent-shell.
type agentShellBody struct {
	ProjectDir string                   `json:"projectDir"`
	Dir        string                   `json:"dir,omitempty"`
	Command    string                   `json:"command,omitempty"`
	Argv       []string                 `json:"argv,omitempty"`
	TimeoutMs  int                      `json:"timeoutMs,omitempty"`
	Env        map[string]string        `json:"env,omitempty"`
	HostEnv    map[string]string        `json:"hostEnv,omitempty"`
	Agent      string                   `json:"agent,omitempty"`
	Terminal   *apitype.TerminalRequest `json:"terminal,omitempty"`
}

// pumpStdin copies the caller's stdin to the session, then says it ended.
func pumpStdin(in *os.File, sess *client.Session) {
	if in == nil {
		_ = sess.CloseStdin()
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if sess.Stdin(buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = sess.CloseStdin()
			}
			return
		}
	}
}
