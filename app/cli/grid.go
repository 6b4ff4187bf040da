package cli

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// grid is a table that fits the terminal: rows come in as tab-separated
// lines (row writes them), and Flush prints them in aligned columns. When
// the table is wider than streams.Width, the widest columns are cut, with an
// ellipsis, until it fits; streams.Wide (--wide) and --json show everything.
type grid struct {
	w     io.Writer
	width int // 0: no limit
	buf   bytes.Buffer
}

// table starts a table for io's terminal.
func table(io streams) *grid {
	g := &grid{w: io.Out}
	if !io.Wide {
		g.width = io.Width
	}
	return g
}

// gap is the space between two columns.
const gap = 2

func (g *grid) Write(p []byte) (int, error) { return g.buf.Write(p) }

// Flush prints the table.
func (g *grid) Flush() error {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSuffix(g.buf.String(), "\n"), "\n") {
		rows = append(rows, strings.Split(line, "\t"))
	}
	g.buf.Reset()
	widths := columnWidths(rows)
	fit(widths, rows, g.width)
	var out strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, cell := range r {
			cell = cut(cell, widths[i])
			line.WriteString(cell)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+gap))
			}
		}
		out.WriteString(strings.TrimRight(line.String(), " "))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(g.w, out.String())
	return err
}

func columnWidths(rows [][]string) []int {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	return widths
}

// fit narrows widths until the table is at most limit wide: always the
// widest column, one rune at a time, and never below its header or 8.
// Ids (the ID and RUN columns) are never cut: people type them back.
func fit(widths []int, rows [][]string, limit int) {
	if limit <= 0 || len(rows) == 0 {
		return
	}
	total := func() int {
		t := gap * (len(widths) - 1)
		for _, w := range widths {
			t += w
		}
		return t
	}
	floor := make([]int, len(widths))
	for i := range widths {
		floor[i] = widths[i]
		if i < len(rows[0]) && rows[0][i] != "ID" && rows[0][i] != "RUN" {
			floor[i] = min(widths[i], max(8, utf8.RuneCountInString(rows[0][i])))
		}
	}
	for total() > limit {
		widest := -1
		for i, w := range widths {
			if w > floor[i] && (widest < 0 || w > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			return // as narrow as it goes
		}
		widths[widest]--
	}
}

// cut shortens s to n runes, marking the cut with an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}
