// Package safetext escapes text that agents or sandboxed code chose before a
// person sees it.
//
// It is the one character policy for such text (sandbox names, images, file
// names, commands, trace targets) on its way to a person: a terminal, a
// notification, a list. Printable reports what may appear raw; Escape writes
// everything else as a Go-style escape, so that no such text can move a
// terminal's cursor, retitle its window, hide what follows (CSI 8m), reverse
// its direction (U+202E) or forge a line (CR, NEL).
package safetext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Policy says in words what Printable allows, for refusals.
const Policy = "letters, marks, digits, punctuation, symbols and plain spaces; no control characters (C0, DEL, C1), no format characters (bidi controls, zero-width), no other separators and no private-use characters"

// Printable reports whether r may be shown raw: a letter, mark, number,
// punctuation, symbol or the ASCII space (strconv.IsPrint). It refuses
// C0 (ESC, CR, LF, TAB...), DEL and C1 (CSI U+009B, NEL U+0085), the
// format characters (bidi embeddings, overrides and isolates U+202A-202E
// and U+2066-2069, marks such as U+200E, zero-width characters, U+FEFF,
// soft hyphens, tags), line and paragraph separators, spaces other than
// U+0020, private-use and unassigned code points.
func Printable(r rune) bool {
	return strconv.IsPrint(r)
}

// Valid reports whether s is valid UTF-8 and every rune of it Printable,
// and otherwise returns the first rune (utf8.RuneError for a bad byte)
// that is not.
func Valid(s string) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return r, false
			}
		}
		if !Printable(r) {
			return r, false
		}
	}
	return 0, true
}

// Escape returns s with every rune that is not Printable written as a Go
// escape (\x1b, \r, \u202e, \u009b) and every byte that is not UTF-8 as
// \xNN. Backslashes stay as they are: they move no cursor. The result is
// always valid, printable UTF-8.
func Escape(s string) string {
	if _, ok := Valid(s); ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case Printable(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
