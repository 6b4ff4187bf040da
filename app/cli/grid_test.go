package cli

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTablesFitTheTerminal(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200)
	cases := []struct {
		name  string
		width int
		wide  bool
		check func(t *testing.T, lines []string)
	}{
		{"fits_80", 80, false, func(t *testing.T, lines []string) {
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > 80 {
					t.Errorf("%d columns: %q", n, l)
				}
			}
			if !strings.Contains(lines[1], "r18ed151a904b1c2c5608") || !strings.HasSuffix(lines[1], "…") {
				t.Errorf("the id must stay whole and the long cell be cut: %q", lines[1])
			}
		}},
		{"wide_shows_all", 80, true, func(t *testing.T, lines []string) {
			if !strings.Contains(lines[1], long) {
				t.Errorf("--wide cut a cell: %q", lines[1])
			}
		}},
		{"not_a_terminal", 0, false, func(t *testing.T, lines []string) {
			if !strings.Contains(lines[1], long) {
				t.Errorf("a pipe got a cut cell: %q", lines[1])
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tw := table(streams{Out: &out, Width: tc.width, Wide: tc.wide})
			row(tw, "RUN", "SOURCE", "COMMAND")
			row(tw, "r18ed151a904b1c2c5608", "cli", long)
			row(tw, "r2", "mcp\x1b[8m", "short")
			tw.Flush()
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != 3 || strings.Contains(out.String(), "\x1b") {
				t.Fatalf("table: %q", out.String())
			}
			tc.check(t, lines)
		})
	}
}
