package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/client"
)

// HookOptions are what `senclaw hook AGENT` is given.
type HookOptions struct {
	Agent string
	// ProjectDir is the agent's project root from its environment.
	ProjectDir string
	// Senclaw is this binary's absolute path.
	Senclaw string
	// Connect reaches the daemon (starting one when none answers).
	Connect func(ctx context.Context) (*client.Client, error)
	Stdin   io.Reader
	IO      IO
}

// Hook executes `senclaw hook AGENT`: it reads the hook's JSON on stdin
// and prints the agent's answer, rewriting the shell tool's command to
// run through the agent shell, or denying it with the reason when the
// agent shell would refuse it or the engine cannot be reached. It exits
// 0 whenever it answered (the answer says allow or deny).
func Hook(ctx context.Context, o HookOptions) int {
	input, err := io.ReadAll(io.LimitReader(o.Stdin, agentshell.MaxHookInput))
	if err != nil {
		fmt.Fprintln(o.IO.Err, "senclaw hook:", err)
		return ExitFailure
	}
	check := func(ctx context.Context, dir string) (string, error) {
		c, err := o.Connect(ctx)
		if err != nil {
			return "", fmt.Errorf("%w (%v)", agentshell.ErrUnreachable, err)
		}
		iso, err := c.AgentShellCheck(ctx, dir)
		if client.IsUnavailable(err) {
			return "", fmt.Errorf("%w (%v)", agentshell.ErrUnreachable, err)
		}
		return iso, err
	}
	out, err := agentshell.Hook(ctx, agentshell.HookRequest{Agent: o.Agent, Input: input, ProjectDir: o.ProjectDir, Senclaw: o.Senclaw, Check: check})
	if err != nil {
		fmt.Fprintln(o.IO.Err, "senclaw hook:", err)
		return ExitUsage
	}
	if out != nil {
		fmt.Fprintln(o.IO.Out, string(out))
	}
	return 0
}

// IntegrateOptions are the flags of `senclaw integrate AGENT`.
type IntegrateOptions struct {
	Agent string
	// Home and Project choose the settings file: the user's (Project
	// "") or the project's.
	Home, Project string
	DataDir       string
	Senclaw       string
	Remove        bool
	DryRun        bool
	// Confirm, when set, asks before writing (an interactive caller).
	Confirm func(question string) bool
}

// Integrate executes `senclaw integrate AGENT`: it shows the change to
// the agent's settings file (or the wrapper), then makes it. Running it
// again changes nothing; --remove undoes it.
func Integrate(o IntegrateOptions, io IO) int {
	var c agentshell.Change
	var err error
	switch o.Agent {
	case agentshell.ClaudeCode:
		c, err = agentshell.Plan(agentshell.ClaudeTarget(o.Home, o.Project), o.Senclaw, o.Remove)
	case agentshell.GeminiCLI:
		c, err = agentshell.Plan(agentshell.GeminiTarget(o.Home, o.Project), o.Senclaw, o.Remove)
	case agentshell.Shell:
		c, err = agentshell.PlanWrapper(o.DataDir, o.Senclaw, o.Remove)
	default:
		fmt.Fprintf(io.Err, "senclaw integrate: unknown agent %q: use claude-code, gemini-cli or shell\n", o.Agent)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw integrate:", err)
		return ExitFailure
	}
	verb := "install"
	if o.Remove {
		verb = "remove"
	}
	if !c.Changed() {
		state := "is already installed in"
		if o.Remove {
			state = "is not installed in"
		}
		fmt.Fprintf(io.Out, "senclaw's %s integration %s %s; nothing to change\n", o.Agent, state, c.Target.Path)
		return 0
	}
	fmt.Fprintf(io.Out, "To %s the %s integration, senclaw changes %s:\n", verb, o.Agent, c.Target.Path)
	writeDiff(io.Out, c.Before, c.After)
	for _, n := range c.Notes {
		fmt.Fprintln(io.Out, "note:", n)
	}
	if o.DryRun {
		fmt.Fprintln(io.Out, "(--dry-run: nothing was written)")
		return 0
	}
	if o.Confirm != nil && !o.Confirm("Write it?") {
		fmt.Fprintln(io.Out, "Nothing was written.")
		return ExitFailure
	}
	if o.Agent == agentshell.Shell {
		err = agentshell.ApplyWrapper(c)
	} else {
		err = agentshell.Apply(c)
	}
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw integrate:", err)
		return ExitFailure
	}
	switch {
	case o.Remove:
		fmt.Fprintf(io.Out, "Removed. %s no longer runs its commands through senclaw.\n", o.Agent)
	case o.Agent == agentshell.Shell:
		fmt.Fprintf(io.Out, "Written. Use it as a shell: SHELL=%s some-agent\n", c.Target.Path)
	default:
		fmt.Fprintf(io.Out, "Installed. %s's shell commands now go through senclaw agent-shell (restart running sessions); the Agent shell switch decides where they run: senclaw policy --agent-shell on|off\n", o.Agent)
	}
	return 0
}

// writeDiff prints the lines that go ("-") and come ("+"), with the
// unchanged ones around them, as a person reviews an edit.
func writeDiff(w io.Writer, before, after []byte) {
	a, b := lines(before), lines(after)
	i, j := 0, 0
	for i < len(a) && j < len(b) && a[i] == b[j] {
		i++
		j++
	}
	ea, eb := len(a), len(b)
	for ea > i && eb > j && a[ea-1] == b[eb-1] {
		ea--
		eb--
	}
	for k := max(0, i-2); k < i; k++ {
		say(w, "  %s", a[k])
	}
	for _, l := range a[i:ea] {
		say(w, "- %s", l)
	}
	for _, l := range b[j:eb] {
		say(w, "+ %s", l)
	}
	for k := ea; k < min(len(a), ea+2); k++ {
		say(w, "  %s", a[k])
	}
}

func lines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// AskYes asks question on a terminal and reads y or yes.
func AskYes(in *os.File, out io.Writer) func(string) bool {
	return func(q string) bool {
		fmt.Fprintf(out, "%s [y/N] ", q)
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		l := strings.ToLower(strings.TrimSpace(line))
		return l == "y" || l == "yes"
	}
}

// IsTerminal reports whether f is a terminal (an interactive caller).
func IsTerminal(f *os.File) bool { return isTerminal(f) }
