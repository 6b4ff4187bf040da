package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestBashCompletion sources the generated script in a real bash and
// completes commands, verbs, flags and flag values.
func TestBashCompletion(t *testing.T) {
	t.Parallel()
	bash := needShell(t, "bash")
	var script bytes.Buffer
	writeBash(&script, commands())
	file := filepath.Join(t.TempDir(), "senclaw.bash")
	if err := os.WriteFile(file, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		words string
		want  string
	}{
		{"senclaw ru", "run runs"},
		{"senclaw tr", "trace"},
		{"senclaw trace ", "on off"},
		{"senclaw run --fs ", "strict allowlist open"},
		{"senclaw run --fs open --netw", "--network"},
		{"senclaw --data-dir /tmp/x ca", "caps"},
		{"senclaw policy --agent-shell ", "on off"},
		{"senclaw completion ", "bash zsh fish"},
		{"senclaw events --ki", "--kind"},
		{"senclaw -", "--data-dir -v --version"},
		{"senclaw logs -", "-f --follow --tail"},
	}
	for _, tc := range cases {
		words := strings.Split(tc.words, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "source " + file + "; COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" +
			itoa(len(words)-1) + "; _senclaw; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Errorf("completing %q: %q (%v), want %q", tc.words, out, err, tc.want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestZshAndFishCompletions checks the other two scripts parse in their
// shells, and that fish completes a verb and a flag value with them.
func TestZshAndFishCompletions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zsh := needShell(t, "zsh")
	var z bytes.Buffer
	writeZsh(&z, commands())
	zf := filepath.Join(dir, "_senclaw")
	os.WriteFile(zf, z.Bytes(), 0o644)
	if out, err := exec.Command(zsh, "-n", zf).CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v %s", err, out)
	}
	fish := needShell(t, "fish")
	var f bytes.Buffer
	writeFish(&f, commands())
	ff := filepath.Join(dir, "senclaw.fish")
	os.WriteFile(ff, f.Bytes(), 0o644)
	cmd := exec.Command(fish, "--no-config", "-c", "source "+ff+"; complete -C 'senclaw trace '; complete -C 'senclaw run --fs '")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	out, err := cmd.CombinedOutput()
	for _, want := range []string{"on\t", "off\t", "strict\t", "allowlist\t", "open\t"} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("fish completion: %v %q lacks %q", err, out, want)
		}
	}
}

// TestManPage renders the generated page with groff, warnings on, and
// checks it documents every command, verb and flag.
func TestManPage(t *testing.T) {
	t.Parallel()
	groff := needShell(t, "groff")
	var page bytes.Buffer
	writeManPage(&page, commands(), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww")
	cmd.Stdin = bytes.NewReader(page.Bytes())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("groff: %v: %s", err, stderr.String())
	}
	text := stripOverstrike(string(out))
	walk(commands(), "", func(path string, c *command) {
		if c.hidden {
			return
		}
		if !strings.Contains(text, "senclaw "+path) {
			t.Errorf("the man page lacks senclaw %s", path)
		}
		for _, d := range flagDocs(c) {
			if !strings.Contains(text, dashed(d.Name)) {
				t.Errorf("the man page lacks senclaw %s --%s", path, d.Name)
			}
		}
	})
}

// stripOverstrike removes groff's bold and underline (x\bx, _\bx).
func stripOverstrike(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i := 0; i < len(r); i++ {
		if i+1 < len(r) && r[i+1] == '\b' {
			i++
			continue
		}
		b.WriteRune(r[i])
	}
	return strings.ReplaceAll(b.String(), "‐", "-")
}
