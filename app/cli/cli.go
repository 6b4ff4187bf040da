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
	"strings"
	"text/tabwriter"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/client"
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
	Trace      bool
	JSON       bool
	Argv       []string
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
		c.Mounts = append(c.Mounts, mount)
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
		fmt.Fprintln(io.Err, "senclaw run: no command given; usage: senclaw run [flags] -- CMD ARGS...")
		return ExitUsage
	}
	body := client.RunBody{Source: app.SourceCLI, Argv: o.Argv, Background: o.Background, Trace: o.Trace}
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
			case "sandbox", "env", "timeout", "json", "background", "trace":
			default:
				fmt.Fprintf(io.Err, "senclaw run: --%s sets up a one-shot sandbox and cannot be used with --sandbox; the sandbox's own settings apply\n", flag)
				return ExitUsage
			}
		}
		if body.Env, err = ParseEnv(o.Env); err != nil {
			fmt.Fprintln(io.Err, "senclaw run:", err)
			return ExitUsage
		}
		if o.Set["timeout"] {
			body.TimeoutMs = int(o.Timeout / time.Millisecond)
		}
		res, err = c.Exec(ctx, o.SandboxID, body, onOutput)
	} else {
		cfg, cerr := o.Config()
		if cerr != nil {
			fmt.Fprintln(io.Err, "senclaw run:", cerr)
			return ExitUsage
		}
		res, err = c.RunOnce(ctx, client.RunOnceBody{RunBody: body, Sandbox: cfg}, onOutput)
	}
	return finishRun(res, err, o, io)
}

func finishRun(res *api.RunReply, err error, o *RunOptions, io IO) int {
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw:", err)
		return runErrorExit(err)
	}
	rec := res.Run
	if o.Trace && !o.JSON {
		defer fmt.Fprintf(io.Err, "senclaw: traced; see what it did with `senclaw events %s`\n", rec.ID)
	}
	if o.JSON {
		writeJSON(io.Out, res)
	} else if o.Background {
		fmt.Fprintf(io.Out, "started run %s in sandbox %s; output goes to %s\n", rec.ID, rec.SandboxID, rec.LogFile)
	}
	for _, m := range rec.Missing {
		fmt.Fprintln(io.Err, "senclaw: note:", m)
	}
	switch {
	case o.Background:
		return 0
	case rec.TimedOut:
		fmt.Fprintf(io.Err, "senclaw: the run timed out after %d ms; the output so far is above\n", rec.DurationMs)
		return ExitTimeout
	case rec.Killed != "":
		fmt.Fprintln(io.Err, "senclaw: the run was killed:", rec.Killed)
		if rec.ExitCode != nil {
			return *rec.ExitCode
		}
		return 137
	case rec.ExitCode == nil:
		fmt.Fprintln(io.Err, "senclaw: the run failed:", rec.Error)
		return ExitFailure
	}
	if rec.Truncated && !o.JSON {
		fmt.Fprintln(io.Err, "senclaw: note: the output was longer than the engine keeps; the middle was dropped from the record")
	}
	return *rec.ExitCode
}

// Create executes `senclaw create`.
func Create(ctx context.Context, c *client.Client, o *RunOptions, io IO) int {
	cfg, err := o.Config()
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw create:", err)
		return ExitUsage
	}
	res, err := c.Create(ctx, cfg)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw create:", err)
		return exitFor(err)
	}
	if o.JSON {
		writeJSON(io.Out, res)
	} else {
		fmt.Fprintln(io.Out, res.Sandbox.ID)
		if res.Note != "" {
			fmt.Fprintln(io.Err, "senclaw: note:", res.Note)
		}
	}
	return 0
}

// runErrorExit is the exit code of a run that did not happen: 126 when
// it was refused, 2 for bad input, 1 when the engine failed.
func runErrorExit(err error) int {
	var ce *client.Error
	switch {
	case client.IsRefused(err):
		return ExitRefused
	case errors.As(err, &ce) && ce.Status < 500:
		return ExitUsage
	}
	return ExitFailure
}

// exitFor maps an API error to an exit code: bad input is a usage error,
// the rest a failure.
func exitFor(err error) int {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 {
		return ExitUsage
	}
	return ExitFailure
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}
