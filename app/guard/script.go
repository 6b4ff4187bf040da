package guard

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Script is a command line read the way a shell would run it: every
// command it would start, and what in it matches a deny group.
type Script struct {
	commands []Invocation
	findings []Finding
	seen     map[string]bool
	off      []Group
}

// Invocation is one program a command line would start.
type Invocation struct {
	// Name is the program's base name, as the shell finds it on PATH
	// (curl for /usr/bin/curl). For a name the shell would expand as a
	// glob it is the pattern (c?rl); for one not known before the run,
	// the known parts with * for the rest.
	Name string `json:"name"`
	// Argv are its arguments as it would get them (Argv[0] as written);
	// parts not known before the run read "…".
	Argv []string `json:"argv"`
	// Dynamic: the name is not known before the command runs ($CMD,
	// $(which x)), or is a glob.
	Dynamic bool `json:"dynamic,omitempty"`
	// Via are the wrappers it runs under, outermost first (sudo, env,
	// sh -c, eval, xargs).
	Via []string `json:"via,omitempty"`
	// Part is the text it came from, escaped for a terminal.
	Part string `json:"part"`
}

// Matches reports whether inv may start the program name: its name is
// name, or a glob or a partly unknown name that name fits (a name not
// known at all fits every program).
func (inv Invocation) Matches(name string) bool {
	if inv.Name == name {
		return true
	}
	if !inv.Dynamic {
		return false
	}
	ok, err := path.Match(inv.Name, name)
	return err == nil && ok
}

// Commands lists every program the command line would start, through
// wrappers (sudo, env, nohup, timeout, xargs, nice, exec, command,
// builtin, find -exec...), shells given code (sh -c, bash -c, eval,
// su -c), aliases and functions, and substitutions ($(...), <(...)).
// Shell builtins that run nothing else (cd, echo, read) are listed too.
func (s *Script) Commands() []Invocation { return s.commands }

// Result is what matched a group that is on.
func (s *Script) Result() Result {
	var out []Finding
	for _, f := range s.findings {
		if !slices.Contains(s.off, f.Group) {
			f.Advice = advice(f)
			out = append(out, f)
		}
	}
	return Result{Findings: out}
}

// Parse reads a shell command line (what /bin/sh -c gets).
func Parse(command string, in Input) *Script {
	s := &Script{off: in.Off}
	w := newWalker(&in, s)
	defer w.failClosed(command)
	w.shell(command, &flow{}, syntax.LangBash)
	return s
}

// ParseArgv reads an exact argument vector as the program it names
// would run it.
func ParseArgv(argv []string, in Input) *Script {
	s := &Script{off: in.Off}
	w := newWalker(&in, s)
	args := make([]value, len(argv))
	for i, a := range argv {
		args[i] = value{s: normalise(a)}
	}
	w.src = shellJoin(argv)
	defer w.failClosed(w.src)
	w.run(args, &flow{}, nil)
	return s
}

// failClosed turns a panic of the guard's own into an Unreadable
// finding: a bug in the guard refuses the command (on the host) rather
// than taking the engine down, which a panic in a scheduler's or an MCP
// call's goroutine would.
func (w *walker) failClosed(command string) {
	if p := recover(); p != nil {
		w.findText(Unreadable, command, fmt.Sprintf("the guard failed while reading it (%v); this is a bug of the guard", p))
	}
}

func (w *walker) record(inv Invocation) {
	if len(w.script.commands) < maxCommands {
		w.script.commands = append(w.script.commands, inv)
	}
}

// maxCommands bounds the invocations a Script keeps.
const maxCommands = 4096

func (w *walker) viaCopy() []string {
	if len(w.via) == 0 {
		return nil
	}
	return slices.Clone(w.via)
}

// shellJoin quotes argv for display.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = fmt.Sprintf("%q", a)
		}
		out[i] = q
	}
	return strings.Join(out, " ")
}
