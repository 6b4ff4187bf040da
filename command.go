// The subcommand table's machinery: how a command is described, how its
// help is printed, and how a mistyped name finds the nearest one.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/editdist"
)

// A command is one subcommand of senclaw: what `senclaw help` and
// `senclaw CMD -h` say about it, its flags, and what it does. Its flags
// are parsed, and -h answered, before anything acts: asking for help
// never starts, stops or asks the daemon anything.
type command struct {
	name    string
	aliases []string
	// summary is the one line `senclaw help` shows.
	summary string
	// args is what follows "senclaw NAME" in the usage line, flags
	// included ("[flags] -- CMD ARGS...").
	args string
	// about, when set, is a paragraph shown under the usage line.
	about    string
	examples []string
	// hidden commands are started by senclaw itself and not listed.
	hidden bool
	// raw commands get their arguments unparsed and parse them
	// themselves (the window process, which the desktop app starts).
	raw bool
	// sub are the verbs of a command that has them (`senclaw trace on`).
	sub []*command
	// setup declares the command's flags on fs and returns what runs it
	// once they are parsed, with the arguments left after them. Nil for a
	// command that only groups verbs.
	setup func(fs *flag.FlagSet, x *invocation) func(args []string) int
}

// invocation is what every command may use: the context, the global
// flags, where to write, and how to reach the daemon.
type invocation struct {
	ctx     context.Context
	dataDir string // --data-dir as given; "" means from the environment
	verbose bool
	io      cli.IO
	logger  *slog.Logger
	// options resolves the engine's options once, when a command needs
	// them (help never does); dirs only its directories, all that
	// reaching the daemon takes (no backend is built for that).
	options func() (app.Options, error)
	dirs    func() (dirs, error)
}

func newInvocation(ctx context.Context, dataDir string, verbose bool, stdout, stderr io.Writer) *invocation {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	x := &invocation{ctx: ctx, dataDir: dataDir, verbose: verbose, io: cli.IO{Out: stdout, Err: stderr, Width: termWidth(stdout), Verbose: verbose}}
	x.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	x.options = sync.OnceValues(func() (app.Options, error) { return engineOptions(dataDir, x.logger) })
	x.dirs = sync.OnceValues(func() (dirs, error) { return engineDirs(dataDir) })
	return x
}

// connect returns a client of this user's daemon, starting one if none
// answers; on failure it has said why and returns the exit code.
func (x *invocation) connect() (*client.Client, int) {
	d, err := x.dirs()
	if err != nil {
		fmt.Fprintln(x.io.Err, "senclaw:", err)
		return nil, cli.ExitFailure
	}
	c, err := connectDaemon(x.ctx, d.runtime, x.dataDir, x.io.Err)
	if err != nil {
		fmt.Fprintln(x.io.Err, "senclaw:", err)
		if errors.As(err, new(*engineUnavailable)) {
			return nil, cli.ExitRefused // nothing can run: as a refused run
		}
		return nil, cli.ExitFailure
	}
	return c, 0
}

// withClient wraps a command body that needs the daemon.
func (x *invocation) withClient(run func(c *client.Client) int) int {
	c, code := x.connect()
	if c == nil {
		return code
	}
	return run(c)
}

// find returns the command (or verb) called name, by name or alias.
func find(cmds []*command, name string) *command {
	for _, c := range cmds {
		if c.name == name {
			return c
		}
		for _, a := range c.aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

// dispatch runs the command path names in cmds with args: verbs are
// looked up first, then the command's flags are parsed (-h prints its
// help and exits 0), then it runs.
func dispatch(cmds []*command, path string, args []string, x *invocation) int {
	name := args[0]
	c := find(cmds, name)
	if c == nil {
		unknown(x.io.Err, path, name, cmds)
		return cli.ExitUsage
	}
	full := strings.TrimSpace(path + " " + c.name)
	rest := args[1:]
	if len(c.sub) > 0 && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		return dispatch(c.sub, full, rest, x)
	}
	if c.setup == nil {
		// A command of verbs alone: -h, or nothing, shows its help.
		if len(rest) == 0 || rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help" {
			printHelp(x.io.Out, full, c)
			return 0
		}
		fmt.Fprintf(x.io.Err, "senclaw %s: %q is not one of its verbs (%s); see senclaw %s -h\n", full, rest[0], verbNames(c), full)
		return cli.ExitUsage
	}
	fs := flag.NewFlagSet(full, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := c.setup(fs, x)
	if c.raw {
		return run(rest)
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(x.io.Out, full, c)
			return 0
		}
		fmt.Fprintf(x.io.Err, "senclaw %s: %v\nusage: senclaw %s %s\nsee senclaw %s -h\n", full, err, full, c.args, full)
		return cli.ExitUsage
	}
	return run(fs.Args())
}

func verbNames(c *command) string {
	var names []string
	for _, s := range c.sub {
		if !s.hidden {
			names = append(names, s.name)
		}
	}
	return strings.Join(names, ", ")
}

// unknown says that name is not a command (or, under path, a verb) and
// suggests the nearest one.
func unknown(w io.Writer, path, name string, cmds []*command) {
	where, what, list := "senclaw", "command", "senclaw help lists them"
	if path != "" {
		where, what, list = "senclaw "+path, "verb", "senclaw "+path+" -h lists them"
	}
	best, bestD := "", 1<<30
	for _, c := range cmds {
		if c.hidden {
			continue
		}
		for _, n := range append([]string{c.name}, c.aliases...) {
			d := editdist.Levenshtein(strings.ToLower(name), n)
			if strings.HasPrefix(n, strings.ToLower(name)) && len(name) >= 2 {
				d = min(d, 1)
			}
			if d < bestD {
				best, bestD = c.name, d
			}
		}
	}
	fmt.Fprintf(w, "%s: unknown %s %q", where, what, name)
	if best != "" && bestD <= max(2, len(name)/3) {
		fmt.Fprintf(w, "; did you mean %q?", best)
	}
	fmt.Fprintf(w, " (%s)\n", list)
}

// printHelp prints a command's help: summary, usage, flags, verbs and
// examples.
func printHelp(w io.Writer, full string, c *command) {
	fmt.Fprintf(w, "senclaw %s: %s\n\nUsage: %s\n", full, c.summary, strings.TrimSpace("senclaw "+full+" "+c.args))
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	if len(c.sub) > 0 {
		fmt.Fprintln(w, "\nVerbs:")
		for _, s := range c.sub {
			if !s.hidden {
				fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
			}
		}
		fmt.Fprintf(w, "\nRun \"senclaw %s VERB -h\" for a verb's flags.\n", full)
	}
	if c.setup != nil {
		if lines := flagLines(c); len(lines) > 0 {
			fmt.Fprintln(w, "\nFlags:")
			for _, l := range lines {
				fmt.Fprintln(w, l)
			}
		}
	}
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range c.examples {
			fmt.Fprintln(w, "  "+e)
		}
	}
}

// flagDoc is one flag as help, the man page and completions show it.
type flagDoc struct {
	Name, Value, Usage, Default string
	Bool                        bool
}

// flagDocs lists c's flags, declared on a throwaway flag set: the same
// declarations the command parses with, so help cannot drift from them.
func flagDocs(c *command) []flagDoc {
	if c.setup == nil {
		return nil
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.setup(fs, &invocation{})
	var docs []flagDoc
	fs.VisitAll(func(f *flag.Flag) {
		value, usage := flag.UnquoteUsage(f)
		if strings.Contains(value, "|") {
			// The choices are the value's name ("--fs strict|allowlist|open"):
			// the text need not repeat them.
			for _, form := range []string{", " + value, value + ": ", " " + value, value} {
				usage = strings.Replace(usage, form, "", 1)
			}
		}
		d := flagDoc{Name: f.Name, Usage: usage}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			d.Bool = true
		} else {
			// flag names an unnamed value after its type ("int",
			// "duration"); named ones are already written as help shows them.
			d.Value = value
			if d.Value == "" || (d.Value == strings.ToLower(d.Value) && !strings.Contains(d.Value, "|")) {
				d.Value = strings.ToUpper(cmpOr(d.Value, "value"))
			}
		}
		switch f.DefValue {
		case "", "0", "false", "[]", "0s":
		default:
			d.Default = f.DefValue
		}
		docs = append(docs, d)
	})
	return docs
}

func flagLines(c *command) []string {
	var lines []string
	for _, d := range flagDocs(c) {
		left := "  " + dashed(d.Name)
		if !d.Bool {
			left += " " + d.Value
		}
		text := d.Usage
		if d.Default != "" {
			text += " (default " + d.Default + ")"
		}
		if len(left) < 24 {
			lines = append(lines, fmt.Sprintf("%-24s %s", left, text))
		} else {
			lines = append(lines, left, strings.Repeat(" ", 25)+text)
		}
	}
	return lines
}

// printOverview is `senclaw help`: every command with its summary.
func printOverview(w io.Writer, cmds []*command) {
	fmt.Fprint(w, "senclaw: run AI agents' commands and code in an OS sandbox.\n\nUsage: senclaw [--data-dir DIR] [-v] COMMAND [flags] [args]\n\n")
	fmt.Fprintf(w, "  %-16s %s\n", "(no command)", "the desktop app: engine, dashboard window and tray (headless builds, or no display: as serve)")
	for _, c := range cmds {
		if !c.hidden {
			fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprint(w, `
The CLI is a client of the daemon: it starts a headless one when none runs.

Global flags (before the command): --data-dir DIR (or SENCLAW_DATA_DIR), -v (log to stderr), --version
Run "senclaw COMMAND -h" for a command's flags and examples.
`)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// dashed is a flag as people type it: -f for a one-letter name, --name
// for the others (Go's flag package takes either).
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
