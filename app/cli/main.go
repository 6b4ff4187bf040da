package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/editdist"
	"github.com/senclaw/sandbox/internal/version"
)

// Env is what Main gets from its process.
type Env struct {
	// LookupEnv reads the environment (os.LookupEnv).
	LookupEnv func(key string) (string, bool)
	// Stdin, Stdout and Stderr are the standard streams.
	Stdin          *os.File
	Stdout, Stderr io.Writer
	// Argv0 is the program's name as it was started (os.Args[0]).
	Argv0 string
	// Hosting hosts the engine in this process: senclaw-engine gives one.
	// Without one (senclaw), the commands that need it exec
	// senclaw-engine with the same arguments, as the same process.
	Hosting Hosting
}

// Main runs senclaw with args (without the program's name) and returns
// its exit code. Every flag is parsed, and -h answered, before anything
// acts: asking for help never starts, stops or asks the daemon anything.
func Main(args []string, env Env) int {
	if env.Stdin == nil {
		env.Stdin = os.Stdin
	}
	if env.LookupEnv == nil {
		env.LookupEnv = os.LookupEnv
	}
	x := &invocation{ctx: context.Background(), env: env, io: streams{Out: env.Stdout, Err: env.Stderr}, stopSignals: func() {}}
	defer func() { x.stopSignals() }()
	root := newRoot(x, commandWord(args))
	if len(args) > 0 && strings.HasPrefix(args[0], "__complete") {
		// Only a shell's completion asks for flag values: the other
		// commands need not pay for the walk of every flag.
		completeValues(root)
	}
	args = normalize(root, args)
	x.args = args
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteC()
	if errors.Is(err, errVersionShown) {
		return 0
	}
	if err != nil {
		sayUsageError(env.Stderr, cmd, err)
		return ExitUsage
	}
	return x.code
}

// invocation is what every command may use: the context, the global
// flags, where to write, and how to reach the daemon. A command's action
// sets code, the process's exit code.
type invocation struct {
	ctx     context.Context
	env     Env
	args    []string // Main's arguments, normalized (what the engine is exec'd with)
	dataDir string   // --data-dir as given; "" means from the environment
	verbose bool
	io      streams
	logger  *slog.Logger
	code    int
	dirs    func() (client.Dirs, error)
	// stopSignals gives SIGINT and SIGTERM back, once setUp took them.
	stopSignals func()
}

// defaultSignals is the annotation of the commands that leave SIGINT and
// SIGTERM to end the process, as they do any program: setting up os/signal
// costs a thread and about 0.3 ms. Not the hooks: a hook that a signal
// ends answers with a denial, where a killed one would let the agent run
// the command as it was.
const defaultSignals = "senclaw:default-signals"

// setUp runs once the flags are parsed, before cmd acts: x.ctx ends at
// SIGINT or SIGTERM, for the commands to stop what they started.
func (x *invocation) setUp(cmd *cobra.Command) {
	if _, ok := cmd.Annotations[defaultSignals]; !ok {
		x.ctx, x.stopSignals = signal.NotifyContext(x.ctx, os.Interrupt, syscall.SIGTERM)
	}
	level := slog.LevelWarn
	if x.verbose {
		level = slog.LevelDebug
	}
	x.io.Verbose, x.io.Width = x.verbose, termWidth(x.env.Stdout)
	x.logger = slog.New(slog.NewTextHandler(x.env.Stderr, &slog.HandlerOptions{Level: level}))
	x.dirs = sync.OnceValues(func() (client.Dirs, error) { return client.FindDirs(x.dataDir, x.getenv) })
}

// stdoutFile and stderrFile are the standard streams as files, for the
// commands that pass a terminal through (shell, agent-shell).
func (x *invocation) stdoutFile() *os.File { return fileOr(x.env.Stdout, os.Stdout) }
func (x *invocation) stderrFile() *os.File { return fileOr(x.env.Stderr, os.Stderr) }

func fileOr(w io.Writer, f *os.File) *os.File {
	if wf, ok := w.(*os.File); ok {
		return wf
	}
	return f
}

// getenv is the environment variable key, "" when unset.
func (x *invocation) getenv(key string) string {
	v, _ := x.env.LookupEnv(key)
	return v
}

// action is a command's RunE: f's result is the exit code.
func (x *invocation) action(f func(args []string) int) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		x.code = f(args)
		return nil
	}
}

// withClient runs f with a client of this user's daemon, starting one if
// none answers; on failure it has said why and returns the exit code.
func (x *invocation) withClient(f func(c *client.Client) int) int {
	d, err := x.dirs()
	if err != nil {
		fmt.Fprintln(x.io.Err, "senclaw:", err)
		return ExitFailure
	}
	c, err := x.connect(x.ctx, d, x.io.Err)
	if err != nil {
		fmt.Fprintln(x.io.Err, "senclaw:", err)
		if errors.As(err, new(*engineUnavailable)) {
			return ExitRefused // nothing can run: as a refused run
		}
		return ExitFailure
	}
	return f(c)
}

// noArgs is the action of a client command that takes flags only.
func (x *invocation) noArgs(name string, f func(c *client.Client) int) func(*cobra.Command, []string) error {
	return x.action(func(args []string) int {
		if len(args) > 0 {
			fmt.Fprintf(x.io.Err, "senclaw %s: unexpected arguments %q; see senclaw %s -h\n", name, args, name)
			return ExitUsage
		}
		return x.withClient(f)
	})
}

// commandTable is senclaw's commands in the order help lists them, each
// in a file of its own with its flags, help and action, by the word that
// calls it. whole marks the commands that read the whole table.
var commandTable = []struct {
	name  string
	make  func(*invocation) *cobra.Command
	whole bool
}{
	{"run", runCommand, false}, {"exec", execCommand, false}, {"shell", shellCommand, false}, {"agent-shell", agentShellCommand, false},
	{"integrate", integrateCommand, false}, {"hook", hookCommand, false}, {"create", createCommand, false},
	{"ls", lsCommand, false}, {"inspect", inspectCommand, false}, {"stats", statsCommand, false}, {"rm", rmCommand, false}, {"cp", cpCommand, false}, {"cache", cacheCommand, false},
	{"ps", psCommand, false}, {"logs", logsCommand, false}, {"kill", killCommand, false}, {"runs", runsCommand, false},
	{"secrets", secretsCommand, false}, {"caps", capsCommand, false}, {"engines", enginesCommand, false}, {"trace", traceCommand, false}, {"schedule", scheduleCommand, false},
	{"events", eventsCommand, false}, {"policy", policyCommand, false}, {"settings", settingsCommand, false}, {"guard", guardCommand, false},
	{"doctor", doctorCommand, false}, {"apps", appsCommand, false}, {"serve", serveCommand, false},
	{"sandbox-server", sandboxServerCommand, false}, {"mcp-config", mcpConfigCommand, false},
	{"tokens", tokensCommand, false}, {"tenants", tenantsCommand, false}, {"security-events", securityEventsCommand, false},
	{"open", openCommand, false}, {"url", urlCommand, false}, {"stop", stopCommand, false},
	{"autostart", autostartCommand, false}, {"completion", completionCommand, true}, {"version", versionCommand, false},
}

// Which commands newRoot makes, besides a command's name.
const (
	allCommands = ""          // every command: help, suggestions, completion
	noCommand   = "--version" // none: senclaw --version alone
)

// commandWord is the command that args call, for newRoot: its name when
// it is one of commandTable's, noCommand for a --version with no
// command, else allCommands. The global flags before it are skipped.
func commandWord(args []string) string {
	version := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || strings.HasPrefix(a, "__complete") {
			return allCommands
		}
		if !strings.HasPrefix(a, "-") {
			for _, c := range commandTable {
				if c.name == a && !c.whole {
					return a
				}
			}
			return allCommands
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "data-dir":
			if !hasValue {
				i++
			}
		case "version":
			version = true
		case "v", "verbose":
		default:
			return allCommands // -h, or a flag senclaw's parser is to refuse
		}
	}
	if version {
		return noCommand
	}
	return allCommands
}

// newRoot is the command table with the command only (a name of
// commandTable's), or with none (noCommand), or with every command
// (allCommands). A CLI process makes only the command it runs: every
// command's flags cost allocations that a hook, which an agent runs
// before each of its commands, would pay for nothing.
func newRoot(x *invocation, only string) *cobra.Command {
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:   "senclaw",
		Short: "run AI agents' commands and code in an OS sandbox",
		// No command: the desktop app (engine, window and tray).
		RunE: x.action(func([]string) int {
			return x.hostEngine("desktop", func(e Hosting) int { return e.Desktop(x.ctx, x.host()) })
		}),
		Args:          unknownCommand,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if v, _ := cmd.Flags().GetBool("version"); v {
				fmt.Fprintln(x.io.Out, version.Line())
				return errVersionShown
			}
			x.setUp(cmd)
			return nil
		},
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&x.dataDir, "data-dir", "", "where the database and workspaces live (default: SENCLAW_DATA_DIR, else the user's data dir)")
	pf.BoolVarP(&x.verbose, "verbose", "v", false, "log what the engine does, and every detail of the notes, to stderr")
	pf.Bool("version", false, "print the version")
	for _, c := range commandTable {
		if only == allCommands || only == c.name {
			root.AddCommand(c.make(x))
		}
	}
	setHelp(root)
	return root
}

// completeValues has every flag whose value names its choices
// ("strict|allowlist|open", "on|off") complete them, and the flags of a
// DIR or a FILE complete folders or files.
func completeValues(cmd *cobra.Command) {
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		value, _ := pflag.UnquoteUsage(f)
		var fn cobra.CompletionFunc
		switch {
		case strings.Contains(value, "|"):
			choices := strings.Split(strings.ToLower(value), "|")
			fn = cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp)
		case value == "DIR" || strings.HasPrefix(value, "SRC"):
			fn = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveFilterDirs
			}
		default:
			return
		}
		_ = cmd.RegisterFlagCompletionFunc(f.Name, fn)
	})
	for _, c := range cmd.Commands() {
		completeValues(c)
	}
}

// errVersionShown ends a run whose --version was answered.
var errVersionShown = errors.New("version shown")

// usageError is bad input on the command line: a flag, a command or a
// verb that is not one.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// unknownCommand refuses a word that is not one of senclaw's commands,
// with the nearest one.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return &usageError{"senclaw: unknown command " + fmt.Sprintf("%q", args[0]) + suggestion(cmd, args[0]) + " (senclaw help lists them)"}
}

// verbs is the action of a command of verbs alone (trace, schedule):
// nothing, or -h, shows its help; anything else is not one of them.
func verbs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	path := commandPath(cmd)
	return &usageError{fmt.Sprintf("senclaw %s: unknown verb %q%s (senclaw %s -h lists them)", path, args[0], suggestion(cmd, args[0]), path)}
}

// suggestion is "; did you mean X?" for the command or verb of cmd
// nearest to name, or "".
func suggestion(cmd *cobra.Command, name string) string {
	// As near as a typo: two edits, or a third of the word's length.
	cmd.SuggestionsMinimumDistance = max(2, len(name)/3)
	best, bestD := "", 1<<30
	for _, s := range cmd.SuggestionsFor(name) {
		if d := editdist.Levenshtein(strings.ToLower(name), s); d < bestD {
			best, bestD = s, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// sayUsageError says what was wrong with the command line, and where its
// usage is.
func sayUsageError(w io.Writer, cmd *cobra.Command, err error) {
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(w, ue.msg)
	case cmd == nil || !cmd.HasParent():
		fmt.Fprintf(w, "senclaw: %v (global flags: --data-dir DIR, -v, --version; senclaw help lists the commands)\n", err)
	default:
		path := commandPath(cmd)
		fmt.Fprintf(w, "senclaw %s: %v\nusage: %s\nsee senclaw %s -h\n", path, err, usageLine(cmd), path)
	}
}

// commandPath is cmd's path below senclaw ("trace on").
func commandPath(cmd *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), "senclaw"), " ")
}

// Commands is senclaw's command table, for what is made from it (the man
// pages) and for tests that walk it; run senclaw with Main.
func Commands() *cobra.Command {
	root := newRoot(&invocation{ctx: context.Background(), env: Env{LookupEnv: os.LookupEnv}, stopSignals: func() {}}, allCommands)
	completeValues(root)
	return root
}
