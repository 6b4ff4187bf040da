package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/senclaw/sandbox/app/cli"
)

// TestManPages renders the pages made from the command table (what make
// install puts in place) with groff, warnings on, and checks they
// document every command, verb and flag.
func TestManPages(t *testing.T) {
	t.Parallel()
	groff := needShell(t, "groff")
	dir := t.TempDir()
	date := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if err := write(cli.Commands(), dir, date); err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	var text strings.Builder
	for _, p := range pages {
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", p)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Fatalf("groff %s: %v: %s", filepath.Base(p), err, stderr.String())
		}
		text.WriteString(stripOverstrike(string(out)))
	}
	if !strings.Contains(text.String(), "SENCLAW_DATA_DIR") {
		t.Error("the man page of senclaw lacks its environment")
	}
	walkVisible(cli.Commands(), func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "senclaw ")
		if !strings.Contains(text.String(), "senclaw "+path) {
			t.Errorf("the man pages lack senclaw %s", path)
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			// A hidden flag is one that is gone and only says what
			// replaced it (serve --allow-remote): no page documents it.
			if !f.Hidden && !strings.Contains(text.String(), "--"+f.Name) {
				t.Errorf("the man pages lack senclaw %s --%s", path, f.Name)
			}
		})
	})
}

// walkVisible calls f for every command and verb but hidden ones.
func walkVisible(cmd *cobra.Command, f func(c *cobra.Command)) {
	for _, c := range cmd.Commands() {
		if c.Hidden {
			continue
		}
		f(c)
		walkVisible(c, f)
	}
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

// needShell finds a tool the test runs, failing under CI instead of
// skipping.
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
