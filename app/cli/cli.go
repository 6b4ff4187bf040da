// Package cli is senclaw's command line: every command, with its flags,
// help and action in a file of its own.
//
// The commands are a cobra table (newRoot), from which help, the shell
// completions, the suggestions for a mistyped command and the man pages
// come too. Each turns its flags into calls of the engine's API through
// app/client and prints the answers for people (or as JSON); the
// commands that host the engine (serve, the desktop app, sandbox-server)
// run it through a Hosting, which only the senclaw-engine executable
// has. Main gets the environment and the streams from its caller.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/safetext"
)

// Exit codes of `senclaw run`, after the command's own.
const (
	ExitTimeout = 124 // the run hit its timeout
	ExitRefused = 126 // the run was refused; the reason is on stderr
	ExitUsage   = 2   // bad flags or input
	ExitFailure = 1   // the engine failed
)

// streams is where a command writes.
type streams struct {
	Out io.Writer
	Err io.Writer
	// Width is the terminal's width in columns that tables fit in; 0
	// when Out is not a terminal (nothing is cut).
	Width int
	// Wide shows every cell whole (--wide).
	Wide bool
	// Verbose prints the details of notes too (the global -v).
	Verbose bool
	// Progress, when set, is a terminal where long work shows how far
	// it got (senclaw cp).
	Progress io.Writer
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
func sayNotes(io streams, n apitype.Notes) {
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

// jsonFlag declares --json.
func jsonFlag(c *cobra.Command) *bool {
	return c.Flags().Bool("json", false, "print JSON instead of a table")
}

// tableFlags declares --json and --wide for a command that prints a
// table cut to the terminal's width.
func tableFlags(c *cobra.Command, x *invocation) *bool {
	c.Flags().BoolVar(&x.io.Wide, "wide", false, "show every cell whole, however wide the table gets")
	return jsonFlag(c)
}

// idsGiven says "no id given" for an empty id in args (a shell variable
// that was not set: `senclaw logs "$RUN"`), which the engine would
// otherwise take for some other route; what names what a command wants.
func idsGiven(io streams, command, what string, args []string) bool {
	for _, a := range args {
		if strings.TrimSpace(a) == "" {
			say(io.Err, "senclaw %s: no id given: give %s", command, what)
			return false
		}
	}
	return true
}
