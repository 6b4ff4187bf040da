// Package benchpeers measures senclaw next to the sandboxes people
// compare it with, for make bench-peers.
//
// Each tool runs the same commands as a whole process, in turns with raw
// bwrap (the reference) in one run, and each figure is given with its
// ratio to raw bwrap taken round by round; what isolation each tool
// gave is detected from inside (peerprobe), not asserted. This file is
// the table the run prints and docs/performance.md keeps: Format writes
// it, Parse reads it back.
package benchpeers

import (
	"fmt"
	"strconv"
	"strings"
)

// Cell is one figure of a row: a median Value in the column's unit and
// its Ratio to raw bwrap in the same run (0: none), with a Note (some
// runs failed, and why), or, when the tool could not do it, Why in
// words.
type Cell struct {
	Value, Ratio float64
	Note, Why    string
}

// Row is one tool's line of the table.
type Row struct {
	// Tool is how it was started, e.g. "senclaw run (bwrap)".
	Tool string
	// True, Python and Burst are milliseconds of `true`, of `python3 -c
	// 'print(1)'`, and seconds of 50 `true` runs 8 at a time.
	True, Python, Burst Cell
	// TTFB (milliseconds to the first byte of a small answer, on a fresh
	// connection) and Throughput (MiB/s of a download) from a local
	// server on 127.0.0.1, through Egress, the way out the tool gives.
	TTFB, Throughput Cell
	Egress           string
	// Isolation is what the probe inside saw, in words.
	Isolation string
}

// Header is the table's first line, the column names.
var Header = []string{"tool", "`true`", "`python3 -c 'print(1)'`", "50 runs, 8 at a time", "egress TTFB", "egress throughput", "egress through", "isolation seen from inside"}

// Units are the units of the figure columns, in Header's order from the
// second column.
var units = []string{"ms", "ms", "s", "ms", "MiB/s"}

// Format is rows as a Markdown table.
func Format(rows []Row) string {
	var b strings.Builder
	line := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	line(Header)
	sep := make([]string, len(Header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows {
		cells := []string{esc(r.Tool)}
		for i, c := range r.cells() {
			cells = append(cells, formatCell(*c, units[i]))
		}
		line(append(cells, esc(r.Egress), esc(r.Isolation)))
	}
	return b.String()
}

func (r *Row) cells() []*Cell { return []*Cell{&r.True, &r.Python, &r.Burst, &r.TTFB, &r.Throughput} }

func formatCell(c Cell, unit string) string {
	if c.Why != "" {
		return "n/a: " + esc(c.Why)
	}
	prec := 1
	if unit == "s" {
		prec = 2
	}
	s := strconv.FormatFloat(c.Value, 'f', prec, 64) + " " + unit
	if c.Ratio > 0 {
		s += fmt.Sprintf(" (%.2fx)", c.Ratio)
	}
	if c.Note != "" {
		s += " [" + esc(strings.NewReplacer("[", "(", "]", ")").Replace(c.Note)) + "]"
	}
	return s
}

// esc keeps a cell's text from ending the cell or the line.
func esc(s string) string {
	return strings.NewReplacer("|", "/", "\n", " ").Replace(s)
}

// Parse reads back the rows of a table Format wrote, found anywhere in
// text (the lines from its header to the first line that is not a row).
func Parse(text string) ([]Row, error) {
	lines := strings.Split(text, "\n")
	head := "| " + strings.Join(Header, " | ") + " |"
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == head {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no table with the header %q", head)
	}
	var rows []Row
	for n, l := range lines[start+2:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			break
		}
		f := strings.Split(strings.Trim(l, "|"), "|")
		if len(f) != len(Header) {
			return nil, fmt.Errorf("row %d has %d cells, want %d: %q", n+1, len(f), len(Header), l)
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		r := Row{Tool: f[0], Egress: f[6], Isolation: f[7]}
		for i, c := range r.cells() {
			var err error
			if *c, err = parseCell(f[i+1], units[i]); err != nil {
				return nil, fmt.Errorf("row %d (%s), %s: %v", n+1, r.Tool, Header[i+1], err)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func parseCell(s, unit string) (Cell, error) {
	if why, ok := strings.CutPrefix(s, "n/a: "); ok {
		return Cell{Why: why}, nil
	}
	num, rest, ok := strings.Cut(s, " "+unit)
	if !ok {
		return Cell{}, fmt.Errorf("%q is neither a figure in %s nor n/a: with a reason", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return Cell{}, fmt.Errorf("%q: %v", s, err)
	}
	c := Cell{Value: v}
	rest = strings.TrimSpace(rest)
	if i := strings.Index(rest, "["); i >= 0 && strings.HasSuffix(rest, "]") {
		c.Note, rest = rest[i+1:len(rest)-1], strings.TrimSpace(rest[:i])
	}
	if rest != "" {
		r, ok := strings.CutPrefix(rest, "(")
		r, ok2 := strings.CutSuffix(r, "x)")
		if !ok || !ok2 {
			return Cell{}, fmt.Errorf("%q: the ratio is not written (N.NNx)", s)
		}
		if c.Ratio, err = strconv.ParseFloat(r, 64); err != nil {
			return Cell{}, fmt.Errorf("%q: %v", s, err)
		}
	}
	return c, nil
}
