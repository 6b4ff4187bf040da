package autorun

import (
	"path"
	"strings"
)

// config adds what a git config file names by path that git would run
// or read more config from: the hooks directory (core.hooksPath), the
// files it includes, and the programs its commands name by path
// (core.fsmonitor, filters, diff and merge drivers, aliases, ...).
// Relative includes are the config file's own directory's; the rest are
// the work tree's top, where git runs hooks: the project (f.base).
func (f *finder) config(rel string) error {
	b, err := f.read(rel, maxConfig)
	if err != nil {
		return err
	}
	for _, kv := range parseConfig(string(b)) {
		what := rel + " (" + kv.key + ")"
		switch {
		case kv.key == "core.hookspath":
			if err := f.named(f.base, what, kv.value, true); err != nil {
				return err
			}
			// husky's layout: the hooks in ".husky/_" run the scripts
			// one level up, which are its hooks as much.
			if hp, ok := f.inFolder(f.base, kv.value); ok && path.Base(hp) == "_" && path.Dir(hp) != f.base {
				if err := f.named(".", what, path.Dir(hp), true); err != nil {
					return err
				}
			}
		case kv.key == "include.path" || strings.HasPrefix(kv.key, "includeif.") && strings.HasSuffix(kv.key, ".path"):
			if p := kv.value; p != "" && !strings.HasPrefix(p, "~") {
				if err := f.named(path.Dir(rel), what, p, false); err != nil {
					return err
				}
			}
		case runsProgram(kv.key):
			if p := programPath(kv.value); p != "" {
				if err := f.named(f.base, what, p, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// runsProgram reports whether the config key (section[.subsection].name,
// lower case) holds a command git runs.
func runsProgram(key string) bool {
	section, rest, _ := strings.Cut(key, ".")
	name := rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		name = rest[i+1:]
	}
	switch section {
	case "core":
		return name == "fsmonitor" || name == "sshcommand" || name == "pager" || name == "editor" || name == "askpass"
	case "sequence":
		return name == "editor"
	case "gpg":
		return name == "program"
	case "diff":
		return name == "external" || name == "command" || name == "textconv"
	case "filter":
		return name == "clean" || name == "smudge" || name == "process"
	case "merge":
		return name == "driver"
	case "credential":
		return name == "helper"
	case "alias":
		return true
	}
	return false
}

// programPath is the program a command value starts with when it names
// it by path ("./tools/x.sh --flag", "!scripts/x"); "" for a program
// found on PATH, a shell variable, a home path or a boolean.
func programPath(v string) string {
	v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "!"))
	word, _, _ := strings.Cut(v, " ")
	word, _, _ = strings.Cut(word, "\t")
	word = strings.Trim(word, `"'`)
	if !strings.Contains(word, "/") || strings.HasPrefix(word, "~") || strings.HasPrefix(word, "$") {
		return ""
	}
	return word
}

// configValue is one key of a git config file: section[.subsection].name
// in lower case (a subsection keeps its case, as git's does), its value.
type configValue struct{ key, value string }

// parseConfig reads git's config syntax as far as what matters here:
// sections, quoted subsections, comments, quoted values, escapes and
// continued lines.
func parseConfig(s string) []configValue {
	var out []configValue
	section := ""
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + lines[i]
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.LastIndexByte(line, ']')
			if end < 0 {
				continue
			}
			head := strings.TrimSpace(line[1:end])
			name, sub, quoted := strings.Cut(head, " ")
			section = strings.ToLower(name)
			if quoted {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			} else if a, b, ok := strings.Cut(section, "."); ok {
				section = a + "." + b
			}
			rest := strings.TrimSpace(line[end+1:])
			if rest == "" || rest[0] == '#' || rest[0] == ';' {
				continue
			}
			line = rest // a key on the same line as its section
		}
		name, value, _ := strings.Cut(line, "=")
		out = append(out, configValue{key: section + "." + strings.ToLower(strings.TrimSpace(name)), value: configText(value)})
	}
	return out
}

// configText is a raw value as git reads it: quotes removed, escapes
// resolved, a comment outside quotes dropped.
func configText(raw string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(raw):
			i++
			switch raw[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(raw[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}
