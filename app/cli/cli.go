// Package cli is the command-line face of the engine: it turns parsed
// subcommand options into engine calls and prints the answers for people
// (or as JSON). main parses the flags; this package never reads the
// environment or os.Args.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/safetext"
	"github.com/senclaw/sandbox/backends"
)

// Exit codes of `senclaw run`, after the command's own.
const (
	ExitTimeout = 124 // the run hit its timeout
	ExitRefused = 126 // the run was refused; the reason is on stderr
	ExitUsage   = 2   // bad flags or input
	ExitFailure = 1   // the engine failed
)

// IO is where a command writes.
type IO struct {
	Out io.Writer
	Err io.Writer
	// Width is the terminal's width in columns that tables fit in; 0
	// when Out is not a terminal (nothing is cut).
	Width int
	// Wide shows every cell whole (--wide).
	Wide bool
	// Verbose prints the details of notes too (the global -v).
	Verbose bool
}

// RunOptions are the flags of `senclaw run` and `senclaw create`.
type RunOptions struct {
	SandboxID  string
	Name       string
	Backend    string
	Image      string
	FsMode     string
	Mounts     []string
	Network    bool
	Env        []string
	Timeout    time.Duration
	CPUs       float64
	MemoryMB   int
	Pids       int
	DiskMB     int
	Listen     []int
	Connect    []int
	Loopback   []int
	Background bool
	TTL        time.Duration
	IdleTTL    time.Duration
	Trace      bool
	JSON       bool
	// Here makes Dir the sandbox's writable project dir (--here).
	Here bool
	// Dir is the caller's working directory, against which relative
	// mount sources and --here resolve.
	Dir  string
	Argv []string
	// Set lists the flags given explicitly, so defaults come from the
	// engine's settings rather than from flag zero values.
	Set map[string]bool
}

// Config turns the sandbox flags into a SandboxConfig.
func (o *RunOptions) Config() (app.SandboxConfig, error) {
	var c app.SandboxConfig
	if o.Set["name"] {
		c.Name = &o.Name
	}
	if o.Set["backend"] {
		c.Backend = &o.Backend
	}
	if o.Set["image"] {
		c.Image = &o.Image
	}
	if o.Set["fs"] {
		c.FsMode = &o.FsMode
	}
	if o.Set["network"] {
		c.Network = &o.Network
	}
	if o.Set["cpus"] {
		c.CPUs = &o.CPUs
	}
	if o.Set["memory"] {
		c.MemoryMB = &o.MemoryMB
	}
	if o.Set["pids"] {
		c.Pids = &o.Pids
	}
	if o.Set["disk"] {
		c.DiskMB = &o.DiskMB
	}
	if o.Set["listen"] {
		c.Listen = o.Listen
	}
	if o.Set["connect"] {
		c.Connect = o.Connect
	}
	if o.Set["loopback"] {
		c.Loopback = o.Loopback
	}
	if o.Set["timeout"] {
		ms := int(o.Timeout / time.Millisecond)
		c.TimeoutMs = &ms
	}
	for _, m := range o.Mounts {
		mount, err := ParseMount(m)
		if err != nil {
			return c, err
		}
		if !filepath.IsAbs(mount.Source) && o.Dir != "" {
			// The CLI sends what the caller meant: a path from where
			// they are, not from wherever the daemon runs.
			mount.Source = filepath.Join(o.Dir, mount.Source)
		}
		c.Mounts = append(c.Mounts, mount)
	}
	if o.Here {
		if o.Dir == "" {
			return c, fmt.Errorf("--here: the current directory is not known")
		}
		dir := o.Dir
		c.ProjectDir = &dir
	}
	env, err := ParseEnv(o.Env)
	if err != nil {
		return c, err
	}
	if len(env) > 0 {
		c.Env = env
	}
	return c, nil
}

// ParseMount parses SRC:TARGET[:ro|:rw].
func ParseMount(s string) (backends.Mount, error) {
	parts := strings.Split(s, ":")
	m := backends.Mount{Source: parts[0]}
	switch len(parts) {
	case 1:
	case 2:
		m.Target = parts[1]
	case 3:
		m.Target = parts[1]
		switch parts[2] {
		case "ro":
			m.ReadOnly = true
		case "rw":
		default:
			return m, fmt.Errorf("--mount %q: the third part must be ro or rw", s)
		}
	default:
		return m, fmt.Errorf("--mount %q: use SRC[:TARGET[:ro]]", s)
	}
	return m, nil
}

// ParseEnv parses K=V pairs.
func ParseEnv(pairs []string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: use KEY=VALUE", kv)
		}
		env[k] = v
	}
	return env, nil
}

// Run executes `senclaw run` through the daemon and returns the process
// exit code: the command's own, 124 on timeout, 126 when refused.
func Run(ctx context.Context, c *client.Client, o *RunOptions, io IO) int {
	if len(o.Argv) == 0 {
		say(io.Err, "senclaw run: no command given; usage: senclaw run [flags] -- CMD ARGS...")
		return ExitUsage
	}
	body := client.RunBody{Source: app.SourceCLI, Argv: o.Argv, Background: o.Background, Trace: o.Trace,
		TTLMs: int(o.TTL / time.Millisecond), IdleTTLMs: int(o.IdleTTL / time.Millisecond)}
	if (o.Set["ttl"] || o.Set["idle-ttl"]) && !o.Background {
		say(io.Err, "senclaw run: --ttl and --idle-ttl are for --background runs; a foreground run has --timeout")
		return ExitUsage
	}
	if o.Background && o.Set["timeout"] {
		say(io.Err, "senclaw run: --timeout does not apply to a --background run, which runs until it is stopped; give --ttl for a deadline")
		return ExitUsage
	}
	var onOutput func(stream, data string)
	if !o.JSON && !o.Background {
		onOutput = func(stream, data string) {
			if stream == "stderr" {
				fmt.Fprint(io.Err, data)
			} else {
				fmt.Fprint(io.Out, data)
			}
		}
	}
	var res *api.RunReply
	var err error
	if o.SandboxID != "" {
		for flag := range o.Set {
			switch flag {
			case "sandbox", "env", "timeout", "json", "background", "trace", "ttl", "idle-ttl":
			default:
				say(io.Err, "senclaw run: --%s sets up a one-shot sandbox and cannot be used with --sandbox; the sandbox's own settings apply", flag)
				return ExitUsage
			}
		}
		if body.Env, err = ParseEnv(o.Env); err != nil {
			say(io.Err, "senclaw run: %v", err)
			return ExitUsage
		}
		if o.Set["timeout"] {
			body.TimeoutMs = int(o.Timeout / time.Millisecond)
		}
		res, err = c.Exec(ctx, o.SandboxID, body, onOutput)
	} else {
		cfg, cerr := o.Config()
		if cerr != nil {
			say(io.Err, "senclaw run: %v", cerr)
			return ExitUsage
		}
		res, err = c.RunOnce(ctx, client.RunOnceBody{RunBody: body, Sandbox: cfg}, onOutput)
	}
	return finishRun(res, err, o, io)
}

func finishRun(res *api.RunReply, err error, o *RunOptions, io IO) int {
	if err != nil {
		say(io.Err, "senclaw: %v", err)
		return runErrorExit(err)
	}
	rec := res.Run
	if o.Trace && !o.JSON {
		defer say(io.Err, "senclaw: traced; see what it did with `senclaw events %s`", rec.ID)
	}
	if o.JSON {
		writeJSON(io.Out, res)
	} else if o.Background {
		// The run's id alone on stdout, as create prints the sandbox's
		// (and docker run -d the container's): run=$(senclaw run ...).
		say(io.Out, "%s", rec.ID)
		say(io.Err, "senclaw: started run %s in sandbox %s; follow its output with: senclaw logs -f %s", rec.ID, rec.SandboxID, rec.ID)
		say(io.Err, "senclaw: it %s", res.Lifetime)
	}
	if !o.JSON {
		sayNotes(io, res.Notes)
	}
	switch {
	case o.Background:
		return 0
	case rec.TimedOut:
		say(io.Err, "senclaw: the run timed out after %d ms; the output so far is above", rec.DurationMs)
		return ExitTimeout
	case rec.Killed != "":
		say(io.Err, "senclaw: the run was killed: %v", rec.Killed)
		if rec.ExitCode != nil {
			return *rec.ExitCode
		}
		return 137
	case rec.ExitCode == nil:
		say(io.Err, "senclaw: the run failed: %v", rec.Error)
		return ExitFailure
	}
	if rec.Truncated && !o.JSON {
		say(io.Err, "senclaw: note: the output was longer than the engine keeps; the middle was dropped from the record")
	}
	return *rec.ExitCode
}

// Create executes `senclaw create`.
func Create(ctx context.Context, c *client.Client, o *RunOptions, io IO) int {
	cfg, err := o.Config()
	if err != nil {
		say(io.Err, "senclaw create: %v", err)
		return ExitUsage
	}
	res, err := c.Create(ctx, cfg)
	if err != nil {
		say(io.Err, "senclaw create: %v", err)
		return exitFor(err)
	}
	if o.JSON {
		writeJSON(io.Out, res)
	} else {
		say(io.Out, "%s", res.Sandbox.ID)
		sayNotes(io, res.Notes)
	}
	return 0
}

// runErrorExit is the exit code of a run that did not happen: 126 when
// it was refused or the daemon's engine could not start (503), 2 for bad
// input, 1 when the engine failed.
func runErrorExit(err error) int {
	if client.IsRefused(err) {
		return ExitRefused
	}
	return exitFor(err)
}

// exitFor maps an API error to an exit code: bad input is a usage error,
// an engine that could not start (503) refuses everything, the rest is a
// failure.
func exitFor(err error) int {
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && ce.Status == http.StatusServiceUnavailable:
		return ExitRefused
	case errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500:
		return ExitUsage
	}
	return ExitFailure
}

// ExitFor is exitFor for the commands outside this package.
func ExitFor(err error) int { return exitFor(err) }

// PrintJSON prints v as indented JSON, for the --json forms of commands
// outside this package; it returns the exit code 0.
func PrintJSON(w io.Writer, v any) int {
	writeJSON(w, v)
	return 0
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// say prints one line for people, with what it quotes (names, commands,
// paths and reasons that an agent or a sandbox chose) escaped: no value can
// move the terminal's cursor, retitle it, hide text or forge a line.
// sayNotes prints a reply's notes on stderr, the same for every verb:
// the note; the rules not enforced when the note names more than one;
// with -v every warning and every detail too.
func sayNotes(io IO, n app.Notes) {
	if n.Note != "" {
		say(io.Err, "senclaw: note: %v", n.Note)
	}
	if len(n.Warnings) > 1 || io.Verbose {
		for _, w := range n.Warnings {
			say(io.Err, "senclaw:   not enforced: %v", w)
		}
	}
	if io.Verbose {
		for _, d := range n.Details {
			say(io.Err, "senclaw:   %v", d)
		}
	}
}

func say(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, safetext.Escape(fmt.Sprintf(format, args...)))
}

// row prints one table row with every cell escaped (safetext): a cell
// can add no column, no line and no terminal sequence.
func row(tw io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = safetext.Escape(c)
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
}
