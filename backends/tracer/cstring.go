package tracer

import (
	"strconv"
	"strings"
)

// matchingParen returns the index of the ")" closing the "(" at open,
// skipping quoted strings and nested brackets, or -1.
func matchingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = skipString(s, i)
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// skipString returns the index of the quote closing the string that
// starts at i (or the last index when it is not closed).
func skipString(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(s) - 1
}

// splitArgs splits an argument list at its top-level commas.
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = skipString(s, i)
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" || len(out) > 0 {
		out = append(out, rest)
	}
	return out
}

// unquote reads a C string as strace prints it ("a\nb"..., with the
// trailing "..." when it was cut at -s). ok is false when s is not a
// quoted string (a NULL pointer, an address).
func unquote(s string) (text string, truncated, ok bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "@\"") { // an abstract socket name
		t, tr, ok := unquote(s[1:])
		return "@" + t, tr, ok
	}
	if len(s) < 2 || s[0] != '"' {
		return "", false, false
	}
	end := skipString(s, 0)
	if end == 0 || s[end] != '"' {
		return "", false, false
	}
	return unescape(s[1:end]), strings.HasPrefix(s[end+1:], "..."), true
}

// unescape undoes strace's C escapes (\n, \", \\, \xHH, octal).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '\\' || i+1 == len(s) {
			b.WriteByte(ch)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'x':
			if i+2 < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
					b.WriteByte(byte(v))
					i += 2
					continue
				}
			}
			b.WriteByte(e)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 8)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}

// fdPath is the path -y printed for a descriptor argument
// ("AT_FDCWD</home/x>" or "3</proc>"), or "".
func fdPath(arg string) string {
	i := strings.IndexByte(arg, '<')
	if i < 0 || !strings.HasSuffix(arg, ">") {
		return ""
	}
	return devSuffix(unescape(arg[i+1 : len(arg)-1]))
}

// stringArray reads an argv array (["a", "b", ...]).
func stringArray(s string) (words []string, truncated bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	for _, item := range splitArgs(s[1 : len(s)-1]) {
		if item == "..." {
			truncated = true
			continue
		}
		w, cut, ok := unquote(item)
		if !ok {
			continue
		}
		truncated = truncated || cut
		words = append(words, w)
	}
	return words, truncated
}
