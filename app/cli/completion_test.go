package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needShell finds a shell the completion tests run, failing under CI
// (which installs bash, zsh and fish) instead of skipping.
func needShell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (scripts/install-deps.sh test installs it)", name)
		}
		t.Skipf("%s is missing", name)
	}
	return p
}

// script is the completion script for shell, as `senclaw completion
// SHELL` prints it.
func script(t *testing.T, shell string) string {
	t.Helper()
	code, out, errOut := senclaw(t, "completion", shell)
	if code != 0 || out == "" {
		t.Fatalf("senclaw completion %s: %d %q", shell, code, errOut)
	}
	file := filepath.Join(t.TempDir(), "senclaw."+shell)
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestBashCompletion sources the generated script in a real bash and
// completes commands, verbs, flags and flag values, with this test
// binary as the senclaw the script asks.
func TestBashCompletion(t *testing.T) {
	t.Parallel()
	bash := needShell(t, "bash")
	// The scripts lean on bash-completion, which loads them where they
	// are installed (Debian's package depends on it).
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bash-completion is missing (scripts/install-deps.sh test installs it): %v", err)
		}
		t.Skip("bash-completion is missing")
	}
	file := script(t, "bash")
	path := senclawOnPath(t) + string(os.PathListSeparator) + os.Getenv("PATH")
	cases := []struct {
		words string
		want  string
	}{
		{"senclaw ru", "run runs"},
		{"senclaw tr", "trace"},
		{"senclaw trace ", "on off"},
		{"senclaw run --fs ", "strict allowlist open"},
		{"senclaw run --fs open --netw", "--network"},
		{"senclaw --data-dir /tmp/x cap", "caps"},
		{"senclaw cache ", "ls clear"},
		{"senclaw policy --agent-shell ", "on off"},
		{"senclaw completion ", "bash zsh fish powershell"},
		{"senclaw events --ki", "--kind"},
		{"senclaw --v", "--verbose --version"},
		{"senclaw logs --", "--data-dir --verbose --version --follow --help --tail"},
	}
	for _, tc := range cases {
		words := strings.Split(tc.words, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "source " + bashCompletion + "; source " + file + "; COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"; COMP_LINE='" + tc.words + "'; COMP_POINT=" + strconv.Itoa(len(tc.words)) + "; __start_senclaw; echo \"${COMPREPLY[*]}\""
		cmd := exec.Command(bash, "--norc", "-c", prog)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.Output() // not stderr: compopt complains outside a real completion
		if got := strings.Join(strings.Fields(string(out)), " "); err != nil || got != tc.want {
			t.Errorf("completing %q: %q (%v), want %q", tc.words, out, err, tc.want)
		}
	}
}

// TestZshAndFishCompletions checks the other scripts parse in their
// shells, and that fish completes a verb and a flag value with them.
func TestZshAndFishCompletions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zsh := needShell(t, "zsh")
	if out, err := exec.Command(zsh, "-n", script(t, "zsh")).CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v %s", err, out)
	}
	fish := needShell(t, "fish")
	cmd := exec.Command(fish, "--no-config", "-c", "source "+script(t, "fish")+"; complete -C 'senclaw trace '; complete -C 'senclaw run --fs '")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir,
		"PATH="+senclawOnPath(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	for _, want := range []string{"on\t", "off\t", "strict", "allowlist", "open"} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("fish completion: %v %q lacks %q", err, out, want)
		}
	}
}
