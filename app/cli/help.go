package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// setHelp makes every command's help what `senclaw help` and `senclaw
// CMD -h` print: the overview for senclaw itself; for a command its
// summary, usage, what it does, its verbs, flags and examples.
func setHelp(root *cobra.Command) {
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		if !cmd.HasParent() {
			printOverview(cmd.OutOrStdout(), cmd)
			return
		}
		printHelp(cmd.OutOrStdout(), cmd)
	})
	root.SetHelpCommand(&cobra.Command{
		Use: "help [COMMAND [VERB]]", Short: "help on a command (as senclaw COMMAND -h)", Hidden: true,
		Run: func(c *cobra.Command, args []string) {
			cmd, _, err := c.Root().Find(args)
			if cmd == nil || err != nil {
				cmd = c.Root()
			}
			cmd.InitDefaultHelpFlag()
			_ = cmd.Help()
		},
	})
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return err })
}

// printOverview is `senclaw help`: every command with its summary.
func printOverview(w io.Writer, root *cobra.Command) {
	fmt.Fprint(w, "senclaw: run AI agents' commands and code in an OS sandbox.\n\nUsage: senclaw [--data-dir DIR] [-v] COMMAND [flags] [args]\n\n")
	fmt.Fprintf(w, "  %-16s %s\n", "(no command)", "the desktop app: engine, dashboard window and tray (headless builds, or no display: as serve)")
	for _, c := range root.Commands() {
		if !c.Hidden {
			fmt.Fprintf(w, "  %-16s %s\n", c.Name(), c.Short)
		}
	}
	fmt.Fprint(w, `
The CLI is a client of the daemon: it starts a headless one when none runs.

Global flags (before the command): --data-dir DIR (or SENCLAW_DATA_DIR), -v (log to stderr), --version
Run "senclaw COMMAND -h" for a command's flags and examples.
`)
}

// usageLine is "senclaw PATH ARGS".
func usageLine(cmd *cobra.Command) string {
	_, args, _ := strings.Cut(cmd.Use, " ")
	return strings.TrimSpace("senclaw " + commandPath(cmd) + " " + args)
}

// printHelp prints a command's help: summary, usage, what it does,
// verbs, flags and examples.
func printHelp(w io.Writer, cmd *cobra.Command) {
	path := commandPath(cmd)
	fmt.Fprintf(w, "senclaw %s: %s\n\nUsage: %s\n", path, cmd.Short, usageLine(cmd))
	if cmd.Long != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.Long)
	}
	if subs := visible(cmd.Commands()); len(subs) > 0 {
		fmt.Fprintln(w, "\nVerbs:")
		for _, s := range subs {
			fmt.Fprintf(w, "  %-10s %s\n", s.Name(), s.Short)
		}
		fmt.Fprintf(w, "\nRun \"senclaw %s VERB -h\" for a verb's flags.\n", path)
	}
	if lines := flagLines(cmd); len(lines) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	if cmd.Example != "" {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range strings.Split(cmd.Example, "\n") {
			fmt.Fprintln(w, "  "+e)
		}
	}
}

func visible(cmds []*cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c)
		}
	}
	return out
}

// examples joins a command's examples for its Example field.
func examples(lines ...string) string { return strings.Join(lines, "\n") }

// flagDoc is one flag as help shows it.
type flagDoc struct {
	Name, Short, Value, Usage, Default string
	Bool                               bool
}

// flagDocs lists cmd's own flags (not the global ones), as the command
// parses them, so help cannot drift from them.
func flagDocs(cmd *cobra.Command) []flagDoc {
	var docs []flagDoc
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || f.Hidden {
			return
		}
		value, usage := pflag.UnquoteUsage(f)
		if strings.Contains(value, "|") {
			// The choices are the value's name ("--fs strict|allowlist|open"):
			// the text need not repeat them.
			for _, form := range []string{", " + value, value + ": ", " " + value, value} {
				usage = strings.Replace(usage, form, "", 1)
			}
		}
		d := flagDoc{Name: f.Name, Short: f.Shorthand, Usage: usage}
		if f.NoOptDefVal == "true" {
			d.Bool = true
		} else {
			// An unnamed value is named after its type ("int",
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

func flagLines(cmd *cobra.Command) []string {
	var lines []string
	for _, d := range flagDocs(cmd) {
		left := "  --" + d.Name
		if d.Short != "" {
			left = "  -" + d.Short + ", --" + d.Name
		}
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

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
