package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/senclaw/sandbox/backends/reexec"
)

func TestMain(m *testing.M) {
	reexec.Init()
	if filepath.Base(os.Args[0]) == "senclaw" {
		// The completion scripts' tests run this binary as senclaw
		// (through a link of that name), as a shell would.
		os.Exit(Main(os.Args[1:], Env{Stdout: os.Stdout, Stderr: os.Stderr, Argv0: os.Args[0]}))
	}
	os.Exit(m.Run())
}

// senclaw runs the CLI in this process, without an engine.
func senclaw(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, Env{Stdout: &out, Stderr: &errOut})
	return code, out.String(), errOut.String()
}

// senclawOnPath puts this test binary on PATH as senclaw, for the
// completion scripts, which run `senclaw __complete`.
func senclawOnPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "senclaw")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestUnknownCommandSuggestsTheNearest checks the answer to a typo.
func TestUnknownCommandSuggestsTheNearest(t *testing.T) {
	cases := []struct{ args, want string }{
		{"rnu", `unknown command "rnu"; did you mean "run"?`},
		{"polcy", `did you mean "policy"?`},
		{"sandbox-srever", `did you mean "sandbox-server"?`},
		{"trace onn", `senclaw trace: unknown verb "onn"; did you mean "on"?`},
		{"zzzzzzzz", `unknown command "zzzzzzzz" (senclaw help lists them)`},
	}
	for _, tc := range cases {
		code, out, errOut := senclaw(t, strings.Fields(tc.args)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "Global flags") {
			t.Errorf("senclaw %s: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if code, out, _ := senclaw(t, "--version"); code != 0 || !strings.HasPrefix(out, "senclaw ") {
		t.Errorf("--version: %d %q", code, out)
	}
}

// TestCommandTableNamesItsCommands: each entry of commandTable is called
// by the name its command answers to, and a root made for one command
// has that command with the same flags as the whole table's.
func TestCommandTableNamesItsCommands(t *testing.T) {
	all := Commands()
	if got, want := len(all.Commands()), len(commandTable); got != want {
		t.Errorf("the whole table has %d commands, want commandTable's %d", got, want)
	}
	for _, c := range commandTable {
		root := newRoot(&invocation{env: Env{LookupEnv: os.LookupEnv}}, c.name)
		if len(root.Commands()) != 1 {
			t.Errorf("newRoot(%q) made %d commands, want it alone", c.name, len(root.Commands()))
			continue
		}
		one, _, err := root.Find([]string{c.name})
		if err != nil || one.Name() != c.name {
			t.Errorf("commandTable's %q makes a command called %q (%v)", c.name, one.Name(), err)
			continue
		}
		whole, _, _ := all.Find([]string{c.name})
		if a, b := flagNames(one), flagNames(whole); a != b {
			t.Errorf("%s alone has the flags %s, in the whole table %s", c.name, a, b)
		}
	}
}

func flagNames(cmd *cobra.Command) string {
	var names []string
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return strings.Join(names, ",")
}

// TestCommandWord: the command that the words call, past the global
// flags; anything else makes the whole table.
func TestCommandWord(t *testing.T) {
	cases := []struct{ args, want string }{
		{"run -- true", "run"},
		{"hook claude-code", "hook"},
		{"--data-dir /tmp/x -v runs --json", "runs"},
		{"-data-dir=/tmp/x run", "run"},
		{"--version", noCommand},
		{"-v --version", noCommand},
		{"--data-dir --version", allCommands}, // --version is the data dir
		{"", allCommands},
		{"-h", allCommands},
		{"help run", allCommands},
		{"rnu", allCommands},
		{"completion bash", allCommands},
		{"__complete run --", allCommands},
		{"--bogus run", allCommands},
	}
	for _, tc := range cases {
		if got := commandWord(strings.Fields(tc.args)); got != tc.want {
			t.Errorf("commandWord(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestVersionWithAnyCommandTable: --version answers alone, after global
// flags and after a command, as it did with the whole table.
func TestVersionWithAnyCommandTable(t *testing.T) {
	for _, args := range []string{"--version", "-v --version", "version", "run --version", "hook claude-code --version"} {
		code, out, errOut := senclaw(t, strings.Fields(args)...)
		if code != 0 || !strings.HasPrefix(out, "senclaw ") || errOut != "" {
			t.Errorf("senclaw %s: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
