package benchpeers

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestTableReadsBackWhatItWrote: every kind of cell (a figure with and
// without its ratio, one with a note of failed runs, n/a with a reason)
// and a '|' in a tool's words come back from Format through Parse.
func TestTableReadsBackWhatItWrote(t *testing.T) {
	t.Parallel()
	rows := []Row{
		{Tool: "raw bwrap (reference)", True: Cell{Value: 7.9, Ratio: 1}, Python: Cell{Value: 78.2, Ratio: 1}, Burst: Cell{Value: 0.64, Ratio: 1},
			TTFB: Cell{Value: 0.4}, Throughput: Cell{Value: 1391.5}, Egress: "bwrap sharing the host's network: direct", Isolation: "own ns: net,pid"},
		{Tool: "srt 0.0.83", True: Cell{Value: 705, Ratio: 71.03}, Python: Cell{Why: "failed: python3 | not found"},
			Burst: Cell{Value: 12.5, Ratio: 19.5, Note: "20 of 200 runs failed: bwrap: Can't find source path"},
			TTFB:  Cell{Value: 4.6, Ratio: 11.14}, Throughput: Cell{Value: 63.4, Ratio: 0.05}, Egress: "srt's proxy", Isolation: "n/a: cannot run here: no bwrap"},
	}
	got, err := Parse("before\n\n" + Format(rows) + "\nafter\n")
	if err != nil {
		t.Fatal(err)
	}
	rows[1].Python.Why = "failed: python3 / not found" // a '|' would end the cell
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("read back\n%+v\nwant\n%+v\nfrom\n%s", got, rows, Format(rows))
	}
	for _, bad := range []string{
		"no table here",
		"| " + strings.Join(Header, " | ") + " |\n| --- |\n| a | b |\n",
		"| " + strings.Join(Header, " | ") + " |\n| --- |\n| t | 1.0 ms (1.00x) | fast | 3 s | 4 ms | 5 MiB/s | e | i |\n",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
}

// TestPerformancePageHasTheTable: docs/performance.md holds a table make
// bench-peers printed, with a row for every tool it runs, each figure a
// figure or n/a with its reason.
func TestPerformancePageHasTheTable(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Parse(string(md))
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, r := range rows {
		tools = append(tools, r.Tool)
	}
	want := []string{"raw bwrap (reference)", "senclaw run (bwrap)", "senclaw run (Landlock)", "senclaw run (Docker)", "srt 0.0.83", "firejail (default profile)", "firejail --noprofile", "docker run --rm"}
	if !reflect.DeepEqual(tools, want) {
		t.Errorf("the page's table has the rows %q, want %q", tools, want)
	}
}
