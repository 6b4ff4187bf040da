package windows

import (
	"fmt"
	"slices"
	"strings"
)

// CommandLine joins argv into the one string CreateProcess takes, quoted
// so that the C runtime's parser (CommandLineToArgvW) gives argv back:
// an argument with a space, tab or quote, or an empty one, is put in
// quotes; a quote is escaped with a backslash, and backslashes before a
// quote (or before the closing quote) are doubled.
func CommandLine(argv []string) (string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", fmt.Errorf("windows: invalid argv %q: empty command", argv)
	}
	if strings.ContainsAny(argv[0], `"`) {
		return "", fmt.Errorf("windows: the program %q contains a quote, which no Windows file name can", argv[0])
	}
	parts := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return "", fmt.Errorf("windows: argument %d %q contains a NUL byte", i, a)
		}
		parts[i] = quoteArg(a)
	}
	return strings.Join(parts, " "), nil
}

func quoteArg(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\n\v\"") {
		return a
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(a); i++ {
		switch c := a[i]; c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
			b.WriteByte('"')
			slashes = 0
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
			b.WriteByte(c)
			slashes = 0
		}
	}
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
	return b.String()
}

// EnvironmentBlock is env ("K=V") as CreateProcess wants it with
// CREATE_UNICODE_ENVIRONMENT: sorted by name without regard to case, each
// entry ended by a NUL, the block by another. Names are unique regardless
// of case (the last one given wins); an empty name, a name with "=", or a
// NUL anywhere is refused.
func EnvironmentBlock(env []string) ([]string, string, error) {
	byName := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) {
			return nil, "", fmt.Errorf("windows: invalid environment entry %q: want NAME=VALUE without NUL", kv)
		}
		byName[strings.ToUpper(k)] = k + "=" + v
	}
	keys := make([]string, 0, len(byName))
	for k := range byName {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = byName[k]
	}
	return out, strings.Join(out, "\x00") + "\x00\x00", nil
}
