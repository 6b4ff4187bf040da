package guard

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

func isStdinPath(p string) bool {
	switch p {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return true
	}
	return false
}

// chdir follows cd for the relative paths after it.
func (w *walker) chdir(args []value) {
	var dir *value
	for i := range args {
		if args[i].s == "--" || !strings.HasPrefix(args[i].s, "-") {
			if args[i].s == "--" && i+1 < len(args) {
				dir = &args[i+1]
			} else if args[i].s != "--" {
				dir = &args[i]
			}
			break
		}
	}
	switch {
	case dir == nil:
		w.cwd = w.in.Home
	case !dir.known() || dir.glob:
		w.cwd = ""
	default:
		w.cwd = w.resolve(dir.s)
	}
}

// setBuiltin follows set: set -- a b gives the positional parameters;
// set alone lists the variables.
func (w *walker) setBuiltin(args []value, r *result) {
	if len(args) == 0 {
		r.out |= tEnv
		return
	}
	for i, a := range args {
		if a.s == "--" {
			w.pos, w.posKnown = args[i+1:], true
			return
		}
		if !strings.HasPrefix(a.s, "-") && !strings.HasPrefix(a.s, "+") {
			w.pos, w.posKnown = args[i:], true
			return
		}
	}
}

// printed is what echo or printf of known arguments prints.
func printed(name string, args []value) (string, bool) {
	for _, a := range args {
		if !a.known() || a.t != 0 {
			return "", false
		}
	}
	if name == "printf" {
		if len(args) == 0 {
			return "", false
		}
		return printfText(args[0].s, strs(args[1:]))
	}
	newline, escapes := true, false
	i := 0
	for ; i < len(args); i++ {
		s := args[i].s
		if len(s) < 2 || s[0] != '-' || strings.Trim(s[1:], "neE") != "" {
			break
		}
		newline = newline && !strings.Contains(s, "n")
		escapes = strings.Contains(s, "e") || (escapes && !strings.Contains(s, "E"))
	}
	text := strings.Join(strs(args[i:]), " ")
	if escapes || strings.Contains(text, `\`) {
		// dash's echo reads escapes without -e; reading them either way
		// sees what either shell would print.
		text = ansiC(text)
	}
	if newline {
		text += "\n"
	}
	return text, true
}

// printfText formats as printf does, for %s %b %c %d %i %u %x %o %%;
// any other directive is not followed.
func printfText(format string, args []string) (string, bool) {
	var b strings.Builder
	next := 0
	for round := 0; round < 64; round++ {
		used := false
		for i := 0; i < len(format); i++ {
			c := format[i]
			if c != '%' {
				if c == '\\' && i+1 < len(format) {
					j := i + 2
					if format[i+1] == 'x' || (format[i+1] >= '0' && format[i+1] <= '7') {
						j = min(len(format), i+4)
					}
					b.WriteString(ansiC(format[i:j]))
					i = j - 1
					continue
				}
				b.WriteByte(c)
				continue
			}
			j := i + 1
			for j < len(format) && strings.IndexByte("-+ #0123456789.", format[j]) >= 0 {
				j++
			}
			if j == len(format) {
				return "", false
			}
			arg := ""
			if format[j] != '%' && next < len(args) {
				arg, used = args[next], true
				next++
			}
			switch format[j] {
			case '%':
				b.WriteByte('%')
			case 's':
				b.WriteString(arg)
			case 'b':
				b.WriteString(ansiC(arg))
			case 'c':
				if arg != "" {
					b.WriteString(arg[:1])
				}
			case 'd', 'i', 'u', 'x', 'o', 'X':
				b.WriteString(arg)
			default:
				return "", false
			}
			i = j
		}
		if !used || next >= len(args) {
			break
		}
	}
	if b.Len() > MaxInput {
		return "", false
	}
	return b.String(), true
}

// netcat finds -e and -c, which run a program on the connection.
func (w *walker) netcat(args []value, at syntax.Node) {
	for _, a := range args {
		s := a.s
		switch {
		case s == "--exec" || s == "--sh-exec" || s == "--lua-exec" ||
			strings.HasPrefix(s, "--exec=") || strings.HasPrefix(s, "--sh-exec=") || strings.HasPrefix(s, "--lua-exec="):
		case len(s) > 1 && s[0] == '-' && s[1] != '-':
			opts := s[1:]
			if i := strings.IndexAny(opts, "0123456789/"); i >= 0 {
				opts = opts[:i]
			}
			if !strings.ContainsAny(opts, "ec") {
				continue
			}
		default:
			continue
		}
		w.find(ReverseShell, at, "netcat with -e or -c runs a program, usually a shell, for whoever is on the other end")
		return
	}
}

// socat finds an EXEC or SYSTEM address: a program on the connection.
func (w *walker) socat(args []value, at syntax.Node) {
	for _, a := range args {
		s := strings.ToLower(a.s)
		if strings.HasPrefix(s, "exec:") || strings.HasPrefix(s, "system:") || s == "exec" || s == "system" {
			w.find(ReverseShell, at, "socat with an EXEC or SYSTEM address runs a program, usually a shell, on the connection")
			return
		}
	}
}
