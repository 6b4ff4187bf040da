package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/agentshell"
)

func integrateCommand(x *invocation) *cobra.Command {
	verb := func(agent, summary, where string, example ...string) *cobra.Command {
		cmd := &cobra.Command{
			Use: agent + " [--user | --project DIR] [--remove] [--dry-run] [--yes]", Short: summary,
			Long:    where + " It shows the change first, keeps the file's other content, does nothing when already installed, and --remove undoes it: the file as it was before, byte for byte (or no file, if the install made it) when nothing else changed it since; otherwise senclaw's hook alone goes. senclaw policy shows where integrations are installed.",
			Example: examples(example...),
		}
		fs := cmd.Flags()
		user := fs.Bool("user", false, "install for every project of this user (the default)")
		project := fs.String("project", "", "install for the project `DIR` only")
		remove := fs.Bool("remove", false, "remove the integration")
		dryRun := fs.Bool("dry-run", false, "show the change and write nothing")
		yes := fs.Bool("yes", false, "do not ask before writing (asked only on a terminal)")
		cmd.RunE = x.action(func(args []string) int {
			if len(args) > 0 {
				fmt.Fprintf(x.io.Err, "senclaw integrate %s: unexpected arguments %q\n", agent, args)
				return ExitUsage
			}
			if *user && *project != "" {
				fmt.Fprintf(x.io.Err, "senclaw integrate %s: give --user or --project DIR, not both\n", agent)
				return ExitUsage
			}
			d, err := x.dirs()
			if err != nil {
				fmt.Fprintln(x.io.Err, "senclaw:", err)
				return ExitFailure
			}
			self := selfPath()
			if self == "" {
				fmt.Fprintln(x.io.Err, "senclaw integrate: cannot find this senclaw executable's path")
				return ExitFailure
			}
			o := integrateOptions{Agent: agent, Home: d.Home, DataDir: d.Data, Senclaw: self, Remove: *remove, DryRun: *dryRun}
			if *project != "" {
				if o.Project, err = filepath.Abs(*project); err != nil {
					fmt.Fprintln(x.io.Err, "senclaw integrate:", err)
					return ExitUsage
				}
			}
			if !*yes && isTerminal(x.env.Stdin) {
				o.Confirm = askYes(x.env.Stdin, x.io.Out)
			}
			return integrate(o, x.io)
		})
		return cmd
	}
	cmd := &cobra.Command{
		Use:   "integrate claude-code|gemini-cli|shell [--user | --project DIR] [--remove]",
		Short: "turn an agent's shell over to the agent shell (claude-code, gemini-cli, shell)",
		Long:  "Once integrated, the agent's shell commands go through senclaw agent-shell, and the Agent shell switch (senclaw policy, the tray, the dashboard) decides where they run: sandboxed in the project, or directly on the host.",
		Example: examples(
			"senclaw integrate claude-code",
			"senclaw integrate gemini-cli --project ~/src/app --remove",
		),
		RunE: verbs,
	}
	cmd.AddCommand(
		verb(agentshell.ClaudeCode, "add senclaw's PreToolUse hook for the Bash tool to Claude Code's settings",
			"Edits ~/.claude/settings.json (--user) or DIR/.claude/settings.local.json (--project DIR, the file Claude Code keeps out of git).",
			"senclaw integrate claude-code", "senclaw integrate claude-code --project . --remove"),
		verb(agentshell.GeminiCLI, "add senclaw's BeforeTool hook for run_shell_command to Gemini CLI's settings",
			"Edits ~/.gemini/settings.json (--user) or DIR/.gemini/settings.json (--project DIR), and turns on Gemini CLI's switch for hooks (tools.enableHooks; hooksConfig.enabled where it was off).",
			"senclaw integrate gemini-cli", "senclaw integrate gemini-cli --dry-run"),
		verb(agentshell.Shell, "write the senclaw-agent-shell wrapper, for programs that run $SHELL",
			"Writes the wrapper into bin/ of senclaw's data dir; set SHELL to it for any agent or tool that runs its commands with $SHELL -c.",
			"senclaw integrate shell", "senclaw integrate shell --remove"),
	)
	return cmd
}

// integrateOptions are the flags of `senclaw integrate AGENT`.
type integrateOptions struct {
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

// integrate executes `senclaw integrate AGENT`: it shows the change to
// the agent's settings file (or the wrapper), then makes it. Running it
// again changes nothing; --remove undoes it.
func integrate(o integrateOptions, io streams) int {
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
	if o.Remove && o.Agent != agentshell.Shell {
		// As the install found the file, when nothing changed it since.
		agentshell.Undo(o.DataDir, &c)
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
	if c.Delete {
		fmt.Fprintf(io.Out, "To %s the %s integration, senclaw removes %s:\n", verb, o.Agent, c.Target.Path)
	} else {
		fmt.Fprintf(io.Out, "To %s the %s integration, senclaw changes %s:\n", verb, o.Agent, c.Target.Path)
	}
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
	_, statErr := os.Lstat(filepath.Dir(c.Target.Path))
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
	case o.Agent == agentshell.Shell:
	case o.Remove:
		agentshell.Forget(o.DataDir, c.Target)
	default:
		if err := agentshell.Remember(o.DataDir, c, statErr == nil); err != nil {
			fmt.Fprintf(io.Err, "senclaw integrate: note: the file as it was could not be kept (%v): --remove will take out senclaw's hook alone, not put the file back byte for byte\n", err)
		}
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

// askYes asks question on a terminal and reads y or yes.
func askYes(in *os.File, out io.Writer) func(string) bool {
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
