package guard

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// resolve makes p absolute against the command's cwd, cleaned: // and
// /./ and .. read as the kernel would read them (links aside). A
// relative path with no cwd known stays relative.
func (w *walker) resolve(p string) string {
	if p == "" {
		return ""
	}
	if !strings.HasPrefix(p, "/") {
		if w.cwd == "" {
			return p
		}
		p = w.cwd + "/" + p
	}
	return path.Clean(p)
}

func isDevSocket(p string) bool {
	return strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/")
}

// checkPaths checks the words of a command for the paths the groups
// watch: a process's environ, and the protected directories. A word
// is read whole, after an =, and after a leading @ (curl -d @file).
func (w *walker) checkPaths(args []value, at syntax.Node) {
	for _, a := range args {
		if !w.spend(1) {
			return
		}
		for _, cand := range candidates(a.s) {
			w.checkPath(cand, a.glob || !a.known(), at)
		}
	}
}

func candidates(s string) []string {
	out := []string{s}
	if i := strings.IndexByte(s, '='); i >= 0 && i+1 < len(s) {
		out = append(out, s[i+1:])
	}
	for _, c := range out {
		if strings.HasPrefix(c, "@") && len(c) > 1 {
			out = append(out, c[1:])
		}
	}
	return out
}

func (w *walker) checkPath(word string, pattern bool, at syntax.Node) {
	if word == "" || strings.HasPrefix(word, "-") && !strings.Contains(word, "/") {
		return
	}
	if !strings.ContainsAny(word, "/.~"+unknownStr) && (w.cwd == "" || w.in.PathWordsOnly) {
		return
	}
	p := w.resolve(word)
	if !strings.HasPrefix(p, "/") {
		return
	}
	if environPath(p, pattern) {
		w.find(EnvDump, at, "it reads a process's environment ("+part(p)+"), secrets included")
	}
	for _, prot := range w.in.Protected {
		if prot == "" || prot == "/" {
			continue
		}
		if names(p, prot, pattern) && !w.allowed(p, pattern, prot) {
			w.find(ProtectedPaths, at, "it names "+part(prot)+", which the engine keeps from every command (its data and config, or another tenant's folder)")
			return
		}
	}
}

// allowed reports whether p lies in an allowed directory inside the
// protected prot (the run's own workspace in the data dir). A pattern
// is allowed only when it spells the allowed directory out, with no
// wildcard that could reach beside it.
func (w *walker) allowed(p string, pattern bool, prot string) bool {
	for _, a := range w.in.Allowed {
		if a == prot || !within(a, prot) {
			continue
		}
		if !pattern && within(p, a) {
			return true
		}
		if pattern && literalPrefix(p, a) {
			return true
		}
	}
	return false
}

// literalPrefix reports whether the pattern p begins with the elements
// of dir, each written out (no glob, nothing unknown).
func literalPrefix(p, dir string) bool {
	pe := strings.Split(strings.TrimPrefix(p, "/"), "/")
	de := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	if len(pe) < len(de) {
		return false
	}
	for i, d := range de {
		if pe[i] != d || strings.ContainsAny(pe[i], "*?["+unknownStr) {
			return false
		}
	}
	return true
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// names reports whether the path p (a glob pattern when pattern, with
// unknown parts matching anything within an element) is dir or inside
// it.
func names(p, dir string, pattern bool) bool {
	if !pattern {
		return within(p, dir)
	}
	pe := strings.Split(strings.TrimPrefix(p, "/"), "/")
	de := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	if len(pe) < len(de) {
		return false
	}
	for i, d := range de {
		if !elementMatch(pe[i], d) {
			return false
		}
	}
	return true
}

// elementMatch matches one path element against a glob element; an
// unknown part matches anything, and ** (or a bad pattern) matches too:
// fail closed.
func elementMatch(pat, name string) bool {
	pat = strings.ReplaceAll(pat, unknownStr, "*")
	ok, err := path.Match(pat, name)
	return ok || err != nil
}

// environPath: /proc/<anything>/environ, and its task/<tid> form.
func environPath(p string, pattern bool) bool {
	if !strings.HasPrefix(p, "/proc/") {
		return false
	}
	el := strings.Split(p[len("/proc/"):], "/")
	last := el[len(el)-1]
	if pattern {
		return len(el) >= 2 && elementMatch(last, "environ")
	}
	return len(el) >= 2 && last == "environ"
}

// checkText looks for the protected directories spelled out in code of
// another language (open('/home/u/.local/share/senclaw/...')).
func (w *walker) checkText(code string, at syntax.Node) {
	for _, prot := range w.in.Protected {
		if prot == "" || prot == "/" {
			continue
		}
		spellings := []string{prot}
		if h := w.in.Home; h != "" && within(prot, h) && prot != h {
			spellings = append(spellings, "~"+prot[len(h):])
		}
		for _, s := range spellings {
			for i := 0; ; {
				j := strings.Index(code[i:], s)
				if j < 0 {
					break
				}
				end := i + j + len(s)
				rest := code[end:]
				full := prot
				if k := strings.IndexAny(rest, "'\" \t\n)"); k >= 0 {
					full += rest[:k]
				} else {
					full += rest
				}
				if (end == len(code) || strings.IndexByte("/'\" \t\n)", code[end]) >= 0) && !w.allowed(path.Clean(full), false, prot) {
					w.find(ProtectedPaths, at, "its code names "+part(prot)+", which the engine keeps from every command")
					return
				}
				i = end
			}
		}
	}
}
