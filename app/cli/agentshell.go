package cli

import (
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

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
)

// AgentShellOptions are the flags and the surroundings of `senclaw
// agent-shell`. main fills them in: it alone reads the environment and
// the working directory.
type AgentShellOptions struct {
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

// AgentShell executes `senclaw agent-shell` as sh -c would run the
// command: stdin, stdout, stderr and the exit code passed through, output
// streamed, a terminal inside on the descriptors that are terminals here,
// its size kept in step, and the signals this process gets passed to the
// command. The exit code is the command's, 124 on timeout, 126 when the
// run was refused (the reason on stderr), 2 for bad input.
func AgentShell(ctx context.Context, c *client.Client, o AgentShellOptions) int {
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
			// A person at a shell: the longest run the engine allows.
			body.TimeoutMs = app.MaxTimeoutMs
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
	if client.IsUnavailable(err) && o.Redial != nil {
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
func (c *caller) terminal() *app.TerminalRequest {
	if !slices.Contains(c.fds, 1) && !slices.Contains(c.fds, 2) {
		return nil
	}
	cols, rows := terminalSize(c.ttyOut)
	if cols == 0 || rows == 0 {
		cols, rows = 80, 24
	}
	return &app.TerminalRequest{Cols: cols, Rows: rows, FDs: c.fds}
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
					_ = sess.Control(app.Control{Cols: cols, Rows: rows})
				}
				continue
			}
			mu.Lock()
			forwarded = s
			mu.Unlock()
			_ = sess.Control(app.Control{Signal: forwardedSignals[s]})
		}
	}()
	started := func(rec app.RunRecord) {
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
	ProjectDir string               `json:"projectDir"`
	Dir        string               `json:"dir,omitempty"`
	Command    string               `json:"command,omitempty"`
	Argv       []string             `json:"argv,omitempty"`
	TimeoutMs  int                  `json:"timeoutMs,omitempty"`
	Env        map[string]string    `json:"env,omitempty"`
	HostEnv    map[string]string    `json:"hostEnv,omitempty"`
	Agent      string               `json:"agent,omitempty"`
	Terminal   *app.TerminalRequest `json:"terminal,omitempty"`
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
