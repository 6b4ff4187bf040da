package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLongFlagsWithOneDashStillWork: senclaw once parsed its flags with
// Go's flag package, which took -json as --json; scripts and agents'
// settings written then must keep working. What follows the first
// argument that is no flag is the sandboxed command's, and is left alone.
func TestLongFlagsWithOneDashStillWork(t *testing.T) {
	t.Parallel()
	root := Commands()
	cases := []struct{ name, in, want string }{
		{"command_flag", "ls -json", "ls --json"},
		{"global_flags", "-data-dir /x -v run -timeout=5s -network -- sh -c x", "--data-dir /x -v run --timeout=5s --network -- sh -c x"},
		{"stops_at_the_command", "run -memory 64 ls -la -json", "run --memory 64 ls -la -json"},
		{"value_that_looks_like_a_flag", "agent-shell -c -json -timeout 5s", "agent-shell -c -json --timeout 5s"},
		{"verb_flags", "apps logs -bytes 10 -f notes", "apps logs --bytes 10 -f notes"},
		{"one_letter_with_two_dashes", "logs --f ID", "logs -f ID"},
		{"help", "run -help", "run --help"},
		{"help_two_dashes_one_letter", "--h", "-h"},
		{"version", "-version", "--version"},
		{"unknown_left_to_the_parser", "ls -frob", "ls -frob"},
		{"double_dash_kept", "ls --json --wide", "ls --json --wide"},
		{"after_dashdash", "run -- -json", "run -- -json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := normalize(root, strings.Fields(tc.in)); !slices.Equal(got, strings.Fields(tc.want)) {
				t.Errorf("normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestOldSpellingsParse runs commands as scripts of the old CLI wrote
// them, and the lines integrate writes into agents' settings, through the
// parser: each reaches its action with the values given (here, the
// error of a daemon that does not run, never one about a flag).
func TestOldSpellingsParse(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("PATH", "/nonexistent") // nothing can start a daemon
	for _, args := range [][]string{
		{"-data-dir", t.TempDir(), "ls", "-json", "-wide"},
		{"runs", "-limit=5", "-json"},
		{"agent-shell", "--agent", "claude-code", "--project", t.TempDir(), "--timeout", "5000ms", "-c", "ls -la"},
		{"agent-shell", "--agent", "shell", "-c", "echo $0", "arg0"},
	} {
		out, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		code := Main(args, Env{Stdout: out, Stderr: out})
		out.Close()
		b, _ := os.ReadFile(out.Name())
		errOut := string(b)
		if code == 2 || strings.Contains(errOut, "flag") || strings.Contains(errOut, "usage:") {
			t.Errorf("senclaw %q: %d %q", args, code, errOut)
		}
	}
}
