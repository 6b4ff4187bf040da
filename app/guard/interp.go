package guard

import (
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Where an interpreter takes its program from.
const (
	fromStdin = iota
	fromCode
	fromFile
	fromNone // a module (python -m), a version query
)

// program is how an interpreter was told what to run.
type program struct {
	from int
	code value // fromCode
	file value // fromFile
	// args are the operands after the program ($0 first for sh -c).
	args []value
	// libs are the modules loaded by option (ruby -rsocket, perl -MIO).
	libs        string
	interactive bool
}

// optSpec describes an interpreter's options.
type optSpec struct {
	code     string // short options whose argument is the program text
	module   string // short options whose argument is a module to run
	withArg  string // short options that take an argument
	attached string // short options whose argument is the bundle's rest only
	lib      string // short options that load a library (kept in libs)
	longCode []string
	longArg  []string
}

var specs = sync.OnceValue(func() map[string]optSpec {
	return map[string]optSpec{
		famPython: {code: "c", module: "m", withArg: "WX"},
		famNode:   {code: "ep", withArg: "rC", lib: "r", longCode: []string{"--eval", "--print"}, longArg: []string{"--require", "--import", "--loader", "--experimental-loader", "--conditions", "--input-type", "--title", "--env-file"}},
		famPerl:   {code: "eE", withArg: "I", attached: "MmilxCdD0F", lib: "Mm"},
		famRuby:   {code: "e", withArg: "rICEF", attached: "0W", lib: "r"},
		famPHP:    {code: "rBRE", withArg: "dcfFztS"},
		famLua:    {code: "e", withArg: "l", lib: "l"},
		famAwk:    {withArg: "vFf"},
		famOther:  {},
	}
})

// readProgram reads an interpreter's options.
func readProgram(fam string, args []value) program {
	if fam == famShell {
		return readShell(args)
	}
	if fam == famAwk {
		return readAwk(args)
	}
	sp := specs()[fam]
	var p program
	var codes []string
	i := 0
	for i < len(args) {
		s := args[i].s
		switch {
		case s == "--":
			i++
			goto operands
		case s == "-":
			p.from = fromStdin
			p.args = args[i+1:]
			return p
		case strings.HasPrefix(s, "--"):
			name, v, has := strings.Cut(s, "=")
			i++
			if contains(sp.longCode, name) {
				if !has && i < len(args) {
					v = args[i].s
					p.code.t |= args[i].t
					i++
				}
				codes = append(codes, v)
				continue
			}
			if !has && contains(sp.longArg, name) {
				if name == "--require" && i < len(args) {
					p.libs += " " + args[i].s
				}
				i++
			}
			continue
		case len(s) > 1 && s[0] == '-':
			i++
			for k := 1; k < len(s); k++ {
				c := s[k]
				rest := s[k+1:]
				switch {
				case strings.IndexByte(sp.code, c) >= 0:
					if rest == "" && i < len(args) {
						rest = args[i].s
						p.code.t |= args[i].t
						i++
					}
					codes = append(codes, rest)
					if fam == famPython {
						// python -c ends its options: the rest is sys.argv.
						p.from, p.code.s, p.args = fromCode, codes[0], args[i:]
						return p
					}
				case strings.IndexByte(sp.module, c) >= 0:
					p.from = fromNone
					return p
				case strings.IndexByte(sp.attached, c) >= 0:
					if strings.IndexByte(sp.lib, c) >= 0 {
						p.libs += " " + rest
					}
				case strings.IndexByte(sp.withArg, c) >= 0:
					if rest == "" && i < len(args) {
						rest = args[i].s
						i++
					}
					if strings.IndexByte(sp.lib, c) >= 0 {
						p.libs += " " + rest
					}
					if fam == famPHP && c == 'f' {
						p.from, p.file, p.args = fromFile, value{s: rest}, args[i:]
						return p
					}
				default:
					if c == 'v' || c == 'V' || c == 'h' {
						if len(s) == 2 {
							p.from = fromNone
							return p
						}
					}
					continue
				}
				break
			}
			continue
		}
		break
	}
operands:
	if len(codes) > 0 {
		p.from, p.code.s, p.args = fromCode, strings.Join(codes, "\n"), args[i:]
		return p
	}
	if i < len(args) {
		p.from, p.file, p.args = fromFile, args[i], args[i+1:]
		return p
	}
	p.from = fromStdin
	return p
}

// readShell reads sh's options: -c takes the first operand as code, -s
// or no operand reads stdin, else the first operand is the script.
func readShell(args []value) program {
	var p program
	cflag, sflag := false, false
	i := 0
	for ; i < len(args); i++ {
		s := args[i].s
		if s == "--" || s == "-" {
			i++
			break
		}
		if strings.HasPrefix(s, "--") {
			if s == "--rcfile" || s == "--init-file" {
				i++
			}
			continue
		}
		if len(s) < 2 || (s[0] != '-' && s[0] != '+') {
			break
		}
		for k := 1; k < len(s); k++ {
			switch s[k] {
			case 'c':
				cflag = true
			case 's':
				sflag = true
			case 'i':
				p.interactive = true
			case 'o', 'O':
				i++ // -o pipefail
			}
		}
	}
	ops := args[min(i, len(args)):]
	switch {
	case cflag && len(ops) > 0:
		p.from, p.code, p.args = fromCode, ops[0], ops[1:]
	case cflag:
		p.from = fromNone
	case sflag || len(ops) == 0:
		p.from, p.args = fromStdin, ops
	default:
		p.from, p.file, p.args = fromFile, ops[0], ops[1:]
	}
	return p
}

// readAwk: the first operand is the program unless -f names a file.
func readAwk(args []value) program {
	var p program
	i := 0
	for i < len(args) {
		s := args[i].s
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		if s == "-f" || s == "--file" {
			if i+1 < len(args) {
				p.from, p.file = fromFile, args[i+1]
			}
			return p
		}
		if s == "-e" || s == "--source" {
			if i+1 < len(args) {
				p.from, p.code = fromCode, args[i+1]
			}
			return p
		}
		if len(s) == 2 && strings.IndexByte("vF", s[1]) >= 0 {
			i++
		}
		i++
	}
	if i < len(args) {
		p.from, p.code, p.args = fromCode, args[i], args[i+1:]
		return p
	}
	p.from = fromNone
	return p
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// langOf is the parser's variant for a shell's own code.
func langOf(name string) syntax.LangVariant {
	switch name {
	case "zsh":
		return syntax.LangZsh
	case "mksh", "ksh", "lksh", "pdksh":
		return syntax.LangMirBSDKorn
	}
	return syntax.LangBash
}

// posixLike are the shells whose code the parser reads.
var posixLike = &table{names: []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "lksh", "pdksh", "rbash"}}

// interpreter follows an interpreter: where its program comes from, and
// what that program is when it is known.
func (w *walker) interpreter(name string, args []value, fl *flow, at syntax.Node, r result) result {
	fam := family(name)
	p := readProgram(fam, args[1:])
	if (name == "deno" || name == "bun") && len(args) > 2 && (args[1].s == "run" || args[1].s == "x") {
		if i := 2 + skipOptions(args[2:], "", "", nil); i < len(args) {
			p = program{from: fromFile, file: args[i], args: args[i+1:]}
		}
	}
	if fam == famShell && (p.from == fromStdin || p.interactive) {
		r.out |= tShell
	}
	into := "it runs in " + name + " what "
	// Under xargs what the pipe gives becomes the interpreter's
	// arguments: its code (sh -c) or its script's name.
	w.fedCodeText(fl.xargs, w.fedText(fl, at), into)
	switch p.from {
	case fromStdin:
		w.fedCodeText(fl.stdin, w.fedText(fl, at), into)
		if fl.stdinText != nil && (fl.stdin|fl.xargs)&(tNet|tDecode) == 0 {
			r.out |= w.program(name, fam, *fl.stdinText, p, nil, fl, at)
		}
	case fromCode:
		w.fedCode(p.code.t, at, into)
		if p.code.t&(tNet|tDecode) == 0 {
			r.out |= w.program(name, fam, p.code.s, p, p.args, fl, at)
		}
	case fromFile:
		w.fedCode(p.file.t, at, into)
		if f := p.file.s; strings.HasPrefix(f, "http://") || strings.HasPrefix(f, "https://") {
			w.find(PipeToInterpreter, at, "it runs in "+name+" a script it downloads ("+part(f)+")")
		}
		if isStdinPath(p.file.s) {
			w.fedCodeText(fl.stdin, w.fedText(fl, at), into)
			if fl.stdinText != nil && fl.stdin&(tNet|tDecode) == 0 {
				r.out |= w.program(name, fam, *fl.stdinText, p, nil, fl, at)
			}
		}
	}
	return r
}

// program reads an interpreter's program text: shell code as a nested
// shell, other languages for the one-liners the groups know.
func (w *walker) program(name, fam, code string, p program, args []value, fl *flow, at syntax.Node) taint {
	if fam == famOther {
		return 0
	}
	if fam == famShell {
		if !posixLike.has(name) {
			return 0
		}
		sub := flow{stdin: fl.stdin, stdinText: nil}
		if p.from == fromCode {
			sub.stdinText = fl.stdinText
		}
		return w.nestedLang(code, name+" -c", args, &sub, langOf(name)).out
	}
	return w.foreign(fam, code, p.libs, at)
}
