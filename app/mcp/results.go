package mcp

import (
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
)

// RunSummary is what every run tool answers.
type RunSummary struct {
	RunID string `json:"runId" jsonschema:"id of the run's record (see sbx_runs, sbx_events)"`
	OK    bool   `json:"ok" jsonschema:"true when the run exited 0 and was neither timed out nor killed"`
	// ExitCode is nil when the process was killed (or, in the background,
	// is still running).
	ExitCode   *int   `json:"exitCode" jsonschema:"exit status; null when the process was killed, or is still running in the background"`
	TimedOut   bool   `json:"timedOut" jsonschema:"the run hit its timeout and was killed; the output so far is kept"`
	Truncated  bool   `json:"truncated" jsonschema:"stdout or stderr was longer than kept; only its start and end are here"`
	DurationMs int64  `json:"durationMs" jsonschema:"wall time in milliseconds"`
	Isolation  string `json:"isolation" jsonschema:"the isolation really applied, measured at start: bwrap, landlock, docker, none, none (degraded) or refused: <reason>"`
	Network    bool   `json:"network" jsonschema:"whether the run had network access"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	notes
	Killed     string `json:"killed,omitempty" jsonschema:"why the engine killed the run, if it did"`
	Background bool   `json:"background,omitempty" jsonschema:"the run was started in the background and goes on"`
	State      string `json:"state,omitempty" jsonschema:"running while a background run goes on, else done"`
	LogFile    string `json:"logFile,omitempty" jsonschema:"for a background run: the host path of the file its output goes to"`
	LogPath    string `json:"logPath,omitempty" jsonschema:"for a background run: the same log file relative to the sandbox's folder; read it with sbx_file_read"`
	// Refusals come last, as they do in the text.
	Refusals []apitype.Refusal `json:"refusals" jsonschema:"what the sandbox was refused during the run, each with its kind (connect, http, secret, unix, write), target, the rule that refused it and allow: how to allow it (tell the person); empty when nothing was"`
}

// summary turns the API's run answer into a RunSummary. The note joins
// what the record says was missing, as the REST answer's note does.
func summary(r *apitype.RunReply) RunSummary {
	rec := r.Run
	return RunSummary{
		RunID: rec.ID, OK: r.OK, ExitCode: rec.ExitCode, TimedOut: rec.TimedOut, Truncated: rec.Truncated,
		DurationMs: rec.DurationMs, Isolation: rec.Isolation, Network: rec.Network,
		Stdout: r.Stdout, Stderr: r.Stderr, notes: mcpNotes(r.Notes),
		Killed: rec.Killed, Background: rec.Background, State: rec.State, LogFile: rec.LogFile,
		LogPath: logPath(rec.ID, rec.LogFile), Refusals: refusalsOf(r),
	}
}

// refusalsOf is the run's refusals, an empty list rather than null.
func refusalsOf(r *apitype.RunReply) []apitype.Refusal {
	if r.Refusals != nil {
		return r.Refusals
	}
	if r.Run.Refusals != nil {
		return r.Run.Refusals
	}
	return []apitype.Refusal{}
}

// logPath is a background run's log file relative to its workspace, where
// the engine puts it (.runs/<runId>.log), or "" when it is elsewhere.
func logPath(runID, hostPath string) string {
	rel := ".runs/" + runID + ".log"
	if runID != "" && strings.HasSuffix(filepath.ToSlash(hostPath), "/"+rel) {
		return rel
	}
	return ""
}

// text renders a run for a reader: a status line, the note, then the
// output streams verbatim (not JSON-escaped).
func (r RunSummary) text() string {
	var b strings.Builder
	status := "still running in the background"
	switch {
	case r.TimedOut:
		status = "timed out"
	case r.Killed != "":
		status = "killed: " + r.Killed
	case r.ExitCode != nil && r.OK:
		status = "exit 0 (ok)"
	case r.ExitCode != nil:
		status = fmt.Sprintf("exit %d (failed)", *r.ExitCode)
	case r.State != "running":
		status = "killed"
	}
	network := "off"
	if r.Network {
		network = "on"
	}
	fmt.Fprintf(&b, "run %s: %s after %d ms; isolation %s; network %s", r.RunID, status, r.DurationMs, r.Isolation, network)
	if r.Truncated {
		b.WriteString("; output truncated")
	}
	b.WriteByte('\n')
	if r.LogPath != "" {
		fmt.Fprintf(&b, "log file (sbx_file_read path): %s\n", r.LogPath)
	} else if r.LogFile != "" {
		fmt.Fprintf(&b, "log file: %s\n", r.LogFile)
	}
	r.notes.write(&b)
	for _, s := range []struct{ name, out string }{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if s.out == "" {
			continue
		}
		fmt.Fprintf(&b, "--- %s ---\n%s", s.name, s.out)
		if !strings.HasSuffix(s.out, "\n") {
			b.WriteByte('\n')
		}
	}
	if len(r.Refusals) > 0 {
		fmt.Fprintf(&b, "--- refused during the run (%d) ---\n", len(r.Refusals))
		for _, f := range r.Refusals {
			b.WriteString("- " + f.Line() + "\n")
		}
	}
	return b.String()
}

// notes are what a reply says in words (app.Notes), described for
// agents.
type notes struct {
	Note     string   `json:"note" jsonschema:"one line: what the sandbox or the run got; for a run, the rules it did not get (empty when everything held)"`
	Details  []string `json:"details" jsonschema:"the rest, one fact an item: what each layer enforces, when a change takes effect, the limits that held"`
	Warnings []string `json:"warnings" jsonschema:"the rules that were asked for and are not enforced, and only those; empty when everything holds"`
}

func mcpNotes(n app.Notes) notes {
	return notes{Note: n.Note, Details: n.Details, Warnings: n.Warnings}
}

// write adds the note and the warnings to a text answer (the details are
// in the structured content).
func (n notes) write(b *strings.Builder) {
	if n.Note != "" {
		fmt.Fprintf(b, "note: %s\n", n.Note)
	}
	if len(n.Warnings) > 1 {
		for _, w := range n.Warnings {
			fmt.Fprintf(b, "not enforced: %s\n", w)
		}
	}
}

// textResult is a tool result whose text is given; the SDK adds the
// structured content.
func textResult(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}
