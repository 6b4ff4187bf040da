package guard

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// unknownStr stands for a part of a word that is not known before the
// command runs ($RANDOM, $(date)). It is a private-use character that
// normalise takes out of the command itself, so only the guard writes it.
const unknownStr = "\uE000"

// normalise undoes the evasions that live in the characters, before
// parsing: invisible characters (zero-width, soft hyphen, bidi controls:
// every format character) are dropped, and the text is NFKC-normalised,
// so that a fullwidth ｃｕｒｌ or a ligature reads as what it looks
// like. The shell would not run such a command as written; the guard
// reads it as the person or model who wrote it meant it.
func normalise(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Cf, r), invisible(r):
		case r == '\uE000':
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return norm.NFKC.String(b.String())
}

// invisible are the characters outside the format category that show as
// nothing: the combining grapheme joiner and the Hangul fillers.
func invisible(r rune) bool {
	switch r {
	case '\u034F', '\u115F', '\u1160', '\u3164', '\uFFA0':
		return true
	}
	return false
}

// MaxInput bounds the command text the guard reads, in bytes, after
// normalisation; a longer command is Unreadable (it fails closed). The
// bound is what keeps the parser's stack safe when a command hides its
// nesting from tooDeep: the parser's deepest recursion costs about 5 KB
// of stack a byte ("((((("), and a goroutine's stack may not pass 1 GB.
const MaxInput = 64 << 10
