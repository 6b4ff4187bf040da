package safetext

import (
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"plain", "build-1 (ok)", "build-1 (ok)"},
		{"unicode_text", "Bücher 文件 🙂", "Bücher 文件 🙂"},
		{"backslash_stays", `C:\Users\x`, `C:\Users\x`},
		{"esc", "a\x1bb", `a\x1bb`},
		{"osc_title", "\x1b]0;pwned\x07", `\x1b]0;pwned\a`},
		{"csi_hide", "\x1b[8mhidden", `\x1b[8mhidden`},
		{"cr_forges_a_line", "ok\rEVIL", `ok\rEVIL`},
		{"newline_tab", "a\nb\tc", `a\nb\tc`},
		{"del", "a\x7f", `a\x7f`},
		{"c1_csi", "a\u009b31m", `a\u009b31m`},
		{"c1_nel", "a\u0085b", `a\u0085b`},
		{"bidi_override", "txt.\u202egnp", `txt.\u202egnp`},
		{"bidi_isolates", "\u2066a\u2069\u2067\u2068", `\u2066a\u2069\u2067\u2068`},
		{"marks_and_zero_width", "a\u200e\u200b\u200d\ufeffb", `a\u200e\u200b\u200d\ufeffb`},
		{"line_separator", "a\u2028b", `a\u2028b`},
		{"nbsp", "a\u00a0b", `a\u00a0b`},
		{"private_use", "\ue000", `\ue000`},
		{"tag_character", "\U000e0041", `\U000e0041`},
		{"bad_utf8", "a\xff\xc3", `a\xff\xc3`},
		{"replacement_char_is_text", "\ufffd", "\ufffd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Escape(tc.in)
			if got != tc.want {
				t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if _, ok := Valid(got); !ok || !utf8.ValidString(got) {
				t.Errorf("Escape(%q) = %q is not printable", tc.in, got)
			}
		})
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]rune{"ok name": 0, "a\x1b": 0x1b, "x\u202e": 0x202e, "\xff": utf8.RuneError, "a\u0085": 0x85} {
		r, ok := Valid(s)
		if ok != (want == 0) || r != want {
			t.Errorf("Valid(%q) = %q, %v", s, r, ok)
		}
	}
}
