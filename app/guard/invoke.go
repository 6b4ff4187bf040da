package guard

import (
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// allNames are the names the guard knows a meaning of: a glob command
// name (/???/c?rl) reads as the first of them it matches.
var allNames = sync.OnceValue(func() []string {
	all := []string{"tr", "at", "batch", "crontab", "xterm", "python", "python2", "python3", "node", "nodejs",
		"perl", "ruby", "php", "awk", "gawk", "mawk", "lua", "cd", "pushd", "alias"}
	for _, t := range []*table{fetchers, connectors, networkSinks, netcats, shells, envListers, wrappers, decoders, builtinRunners, others} {
		all = append(all, t.names...)
	}
	slices.Sort(all)
	return slices.Compact(all)
})

// decoders print what they decode; decoding reports whether these
// arguments make them decode (base64 without -d encodes).
var decoders = &table{names: []string{"base64", "base32", "basenc", "xxd", "uudecode", "openssl", "gzip", "gunzip", "zcat",
	"bzip2", "bunzip2", "bzcat", "xz", "unxz", "xzcat", "lzma", "unlzma", "lzcat", "zstd", "unzstd",
	"zstdcat", "lz4", "lz4cat", "brotli", "rev", "uncompress"}}

// builtinRunners run their arguments as shell code or a file of it.
var builtinRunners = &table{names: []string{"eval", "source", "."}}

func decoding(name string, args []value) bool {
	switch name {
	case "uudecode", "gunzip", "zcat", "bunzip2", "bzcat", "unxz", "xzcat", "unlzma", "lzcat", "unzstd", "zstdcat", "lz4cat", "rev", "uncompress":
		return true
	case "xxd":
		return hasShort(args, 'r') || hasArg(args, "-revert")
	}
	return hasShort(args, 'd') || hasShort(args, 'D') || hasArg(args, "--decode") || hasArg(args, "--decompress")
}

// hasShort reports whether a short option bundle of args has letter c
// (-d, -di).
func hasShort(args []value, c byte) bool {
	for _, a := range args {
		s := a.s
		if s == "--" {
			return false
		}
		if len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.IndexByte(s[1:], c) >= 0 && isLetters(s[1:]) {
			return true
		}
	}
	return false
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func hasArg(args []value, a string) bool {
	for _, v := range args {
		if v.s == a || strings.HasPrefix(v.s, a+"=") {
			return true
		}
	}
	return false
}

func strs(args []value) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a.s, unknownStr, "…")
	}
	return out
}

func taintOf(args []value) taint {
	var t taint
	for _, a := range args {
		t |= a.t
	}
	return t
}

// run reads one program started with args, at node (nil for an argv).
// It records the invocation, follows wrappers, shells, functions and
// aliases, and applies the checks that belong to one program.
func (w *walker) run(args []value, fl *flow, at syntax.Node) result {
	if len(args) == 0 || !w.spend(len(args)) {
		return result{}
	}
	w.checkPaths(args, at)
	name := args[0]
	cmd := baseName(name.s)
	known := name.known()
	w.fedCode(name.t, at, "it runs as a command what ")
	if known && !name.glob {
		if a, ok := w.aliases[cmd]; ok {
			return w.alias(cmd, a, args, fl, at)
		}
		if _, ok := w.funcs[cmd]; ok {
			return w.callFunc(cmd, args[1:], fl)
		}
	}
	inv := Invocation{Name: cmd, Argv: strs(args), Dynamic: !known || name.glob, Via: w.viaCopy(), Part: part(w.text(at))}
	n := cmd
	r := result{out: fl.stdin | taintOf(args[1:])}
	rest := args[1:]
	switch {
	case known && !name.glob:
	case cmd == unknownStr && !name.glob:
		inv.Name = "*"
		if len(rest) > 0 && rest[0].known() && !strings.HasPrefix(rest[0].s, "-") {
			// $SUDO apt-key add -: a name known only at run time before
			// a command is read as a wrapper ("sudo", or nothing) of it.
			w.record(inv)
			if len(w.via) >= maxWrappers {
				return r
			}
			w.via = append(w.via, "$…")
			rr := w.run(rest, fl, at)
			w.via = w.via[:len(w.via)-1]
			r.out |= rr.out
			return r
		}
		// "$SHELL", "$X -": the program may be any interpreter.
		w.fedCodeText(fl.stdin|fl.xargs, w.fedText(fl, at), "it runs in a program it names only at run time what ")
	default:
		// A glob, or a name partly known: the guard cannot look which
		// program the shell finds, so the checks go by the first name
		// it knows that fits, and what any of them would print or run
		// counts (/???/c?rl is curl).
		inv.Name = strings.ReplaceAll(cmd, unknownStr, "*")
		cands := globMatches(allNames(), cmd)
		if len(cands) > 0 {
			n = cands[0]
		}
		interp := false
		for _, c := range cands {
			switch {
			case fetchers.has(c):
				r.out |= tNet
			case decoders.has(c):
				r.out |= tDecode
			}
			interp = interp || family(c) != ""
		}
		if interp {
			w.fedCodeText(fl.stdin|fl.xargs, w.fedText(fl, at), "it runs in a program it names only at run time what ")
		}
	}
	w.record(inv)
	switch {
	case fetchers.has(n) || (n == "openssl" && hasArg(rest, "s_client")):
		r.out |= tNet
	case decoders.has(n) && decoding(n, rest):
		r.out |= tDecode
	case n == "tr" && operands(rest) >= 2 && !hasShort(rest, 'd'):
		r.out |= tDecode // tr 'A-Za-z' 'N-ZA-Mn-za-m': rot13
	}
	if networkSinks.has(n) && (fl.stdin|taintOf(rest))&tEnv != 0 {
		w.findText(EnvDump, w.fedText(fl, at), "it sends the environment's variables to another machine")
	}
	if connectors.has(n) && fl.stdin&tShell != 0 {
		w.findText(ReverseShell, w.fedText(fl, at), "it connects a shell reading its commands from stdin to another machine")
	}
	switch {
	case netcats.has(n):
		w.netcat(rest, at)
	case n == "socat":
		w.socat(rest, at)
	case n == "xterm" && hasArg(rest, "-display"):
		w.find(ReverseShell, at, "xterm -display opens a terminal on another machine's display")
	case n == "at" || n == "batch" || n == "crontab":
		// They read commands from stdin (crontab: a table of them) and
		// run them later.
		if !hasShort(rest, 'f') && !hasShort(rest, 'l') && !hasShort(rest, 'r') && (n != "crontab" || operands(rest) == 0 || hasArg(rest, "-")) {
			w.fedCodeText(fl.stdin, w.fedText(fl, at), "it schedules as commands what ")
		}
	case wrappers.has(n):
		return w.wrapper(n, args, fl, at, r)
	case family(n) != "":
		return w.interpreter(n, args, fl, at, r)
	case n == "eval":
		code := joinValues(rest)
		w.fedCode(code.t|fl.xargs, at, "it evaluates as shell code what ")
		if code.t&(tNet|tDecode) == 0 && code.s != "" {
			return w.nested(code.s, "eval", nil, fl)
		}
	case n == "source" || n == ".":
		if len(rest) > 0 {
			w.fedCode(rest[0].t, at, "it sources as shell code what ")
			if isStdinPath(rest[0].s) {
				w.fedCodeText(fl.stdin, w.fedText(fl, at), "it sources as shell code what ")
			}
		}
	case n == "cd" || n == "pushd":
		w.chdir(rest)
	case n == "alias":
		for _, a := range rest {
			if k, v, ok := strings.Cut(a.s, "="); ok && a.known() {
				w.aliases[k] = v
			}
		}
	case n == "set":
		w.setBuiltin(rest, &r)
	case n == "printenv":
		r.out |= tEnv
		if operands(rest) == 0 {
			w.find(EnvDump, at, "it prints the whole environment, secrets included")
		}
	case envListers.has(n):
		if operands(rest) == 0 {
			r.out |= tEnv
		}
	case n == "echo" || n == "printf":
		if text, ok := printed(n, rest); ok && r.out == 0 {
			r.text = &text
		}
	}
	return r
}

// operands counts the arguments that are not options.
func operands(args []value) int {
	n := 0
	for _, a := range args {
		if !strings.HasPrefix(a.s, "-") {
			n++
		}
	}
	return n
}

func joinValues(vs []value) value {
	var v value
	parts := make([]string, len(vs))
	for i, a := range vs {
		parts[i] = a.s
		v.t |= a.t
	}
	v.s = strings.Join(parts, " ")
	return v
}

// fedCode records what running code from a source of taint t means:
// a download run is pipeToInterpreter, a decoded text decodeAndRun.
// what is the start of the finding's words ("it runs as a command what ").
func (w *walker) fedCode(t taint, at syntax.Node, what string) {
	w.fedCodeText(t, w.text(at), what)
}

func (w *walker) fedCodeText(t taint, text, what string) {
	if t&tNet != 0 {
		w.findText(PipeToInterpreter, text, what+"a download or a socket gives")
	}
	if t&tDecode != 0 {
		w.findText(DecodeAndRun, text, what+"a decoder prints")
	}
}

// fedText is the text to show for what reaches at through its stdin:
// the pipeline when there is one.
func (w *walker) fedText(fl *flow, at syntax.Node) string {
	if fl.pipe != "" {
		return fl.pipe
	}
	return w.text(at)
}

// nested reads code as a shell run from this one would: the line's
// variables (as if exported), but its own functions and aliases.
func (w *walker) nested(code, via string, pos []value, fl *flow) result {
	return w.nestedLang(code, via, pos, fl, syntax.LangBash)
}

func (w *walker) nestedLang(code, via string, pos []value, fl *flow, lang syntax.LangVariant) result {
	if !w.enter() {
		return result{}
	}
	defer w.leave()
	w.via = append(w.via, via)
	defer func() { w.via = w.via[:len(w.via)-1] }()
	if via == "eval" {
		// eval reads its code in this shell: same functions, same
		// positional parameters.
		return w.shell(code, fl, lang)
	}
	funcs, aliases := w.funcs, w.aliases
	p, known, arg0 := w.pos, w.posKnown, w.arg0
	w.funcs, w.aliases = map[string]*syntax.Stmt{}, map[string]string{}
	w.pos, w.posKnown = pos, true
	if len(pos) > 0 {
		w.arg0, w.pos = pos[0].s, pos[1:]
	}
	defer func() {
		w.funcs, w.aliases = funcs, aliases
		w.pos, w.posKnown, w.arg0 = p, known, arg0
	}()
	return w.shell(code, fl, lang)
}

// alias runs an alias: its text, then the command's other words.
func (w *walker) alias(name, text string, args []value, fl *flow, at syntax.Node) result {
	if !w.enter() {
		return result{}
	}
	defer w.leave()
	aliases := w.aliases
	w.aliases = map[string]string{}
	for k, v := range aliases {
		if k != name {
			w.aliases[k] = v // an alias does not expand itself
		}
	}
	defer func() { w.aliases = aliases }()
	line := text
	for _, a := range args[1:] {
		q, err := syntax.Quote(a.s, syntax.LangBash)
		if err != nil {
			q = unknownStr
		}
		line += " " + q
	}
	return w.shell(line, fl, syntax.LangBash)
}
