package guard

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// taint says where the text of a value came from, for what it is fed to.
type taint uint8

const (
	// tNet is what a download or a socket gave.
	tNet taint = 1 << iota
	// tDecode is what a decoder printed.
	tDecode
	// tEnv is the environment's contents.
	tEnv
	// tShell is what a shell reading its commands from stdin printed:
	// with a connection on the other end, a remote prompt.
	tShell
)

// value is a word, or one field of one, as the shell would expand it:
// unknown parts are unknownStr.
type value struct {
	s string
	// glob: the shell would expand it as a pattern (an unquoted * ? [).
	glob bool
	t    taint
}

func (v value) known() bool { return !strings.Contains(v.s, unknownStr) }

var unknownValue = value{s: unknownStr}

// maxBraceWords bounds what one word's brace expansion may make:
// {1..1000000} is not expanded (it reads as unknown).
const maxBraceWords = 64

// fieldBuilder splits a word's expansion into fields as the shell does:
// unquoted expansions split at IFS, quoted text never.
type fieldBuilder struct {
	out     []value
	cur     strings.Builder
	glob    bool
	t       taint
	started bool // a field has begun ("" makes one)
	noSplit bool // an assignment's value: one field
	ifs     string
}

func (b *fieldBuilder) add(s string, glob bool, t taint) {
	b.started = true
	b.glob = b.glob || glob
	b.t |= t
	if b.cur.Len()+len(s) > MaxInput {
		// A value grown past what a command may be (a=$a$a$a...) is
		// not followed: it reads as unknown.
		if !strings.HasSuffix(b.cur.String(), unknownStr) {
			b.cur.WriteString(unknownStr)
		}
		return
	}
	b.cur.WriteString(s)
}

// expansion adds the result of an unquoted expansion: split at IFS,
// and a pattern if it holds glob characters.
func (b *fieldBuilder) expansion(v value) {
	if b.noSplit {
		b.add(v.s, false, v.t)
		return
	}
	glob := strings.ContainsAny(v.s, "*?[")
	s := v.s
	for s != "" {
		i := strings.IndexAny(s, b.ifs)
		if i < 0 {
			b.add(s, glob, v.t)
			return
		}
		if i > 0 {
			b.add(s[:i], glob, v.t)
		}
		b.flush()
		_, size := utf8.DecodeRuneInString(s[i:])
		s = s[i+size:]
	}
	b.t |= v.t
}

func (b *fieldBuilder) flush() {
	if b.started {
		b.out = append(b.out, value{s: b.cur.String(), glob: b.glob, t: b.t})
	}
	b.cur.Reset()
	b.glob, b.t, b.started = false, 0, false
}

// fields expands word into the fields the shell would pass.
func (w *walker) fields(word *syntax.Word, fl *flow) []value {
	if word == nil {
		return nil
	}
	var out []value
	for _, parts := range w.braces(word) {
		b := fieldBuilder{ifs: w.ifs()}
		for i, p := range parts {
			w.part(&b, p, false, i == 0, fl)
		}
		b.flush()
		out = append(out, b.out...)
	}
	return out
}

// literal expands word as one string, as an assignment's value or a
// redirection's target: no field splitting, no brace expansion.
func (w *walker) literal(word *syntax.Word, fl *flow) value {
	if word == nil {
		return value{}
	}
	b := fieldBuilder{noSplit: true, ifs: w.ifs()}
	for i, p := range word.Parts {
		w.part(&b, p, false, i == 0, fl)
	}
	b.flush()
	if len(b.out) == 0 {
		return value{}
	}
	return b.out[0]
}

func (w *walker) ifs() string {
	if v, ok := w.vars["IFS"]; ok && v.known() {
		return v.s
	}
	return " \t\n"
}

// braces returns the words brace expansion makes of word, as lists of
// parts: {curl,-s} is two words. Past maxBraceWords the word is kept
// whole (its braces read as unknown).
func (w *walker) braces(word *syntax.Word) [][]syntax.WordPart {
	syntax.SplitBraces(word)
	out, ok := expandBraces(word.Parts)
	if !ok {
		return [][]syntax.WordPart{word.Parts}
	}
	return out
}

func expandBraces(parts []syntax.WordPart) ([][]syntax.WordPart, bool) {
	acc := [][]syntax.WordPart{nil}
	for _, p := range parts {
		be, ok := p.(*syntax.BraceExp)
		if !ok {
			for i := range acc {
				acc[i] = append(acc[i], p)
			}
			continue
		}
		alts, ok := braceAlternatives(be)
		if !ok || len(acc)*len(alts) > maxBraceWords {
			return nil, false
		}
		next := make([][]syntax.WordPart, 0, len(acc)*len(alts))
		for _, pre := range acc {
			for _, alt := range alts {
				next = append(next, append(append([]syntax.WordPart(nil), pre...), alt...))
			}
		}
		acc = next
	}
	return acc, true
}

func braceAlternatives(be *syntax.BraceExp) ([][]syntax.WordPart, bool) {
	if !be.Sequence {
		var alts [][]syntax.WordPart
		for _, e := range be.Elems {
			sub, ok := expandBraces(e.Parts)
			if !ok || len(alts)+len(sub) > maxBraceWords {
				return nil, false
			}
			alts = append(alts, sub...)
		}
		return alts, true
	}
	lits := make([]string, len(be.Elems))
	for i, e := range be.Elems {
		lits[i] = e.Lit()
	}
	if len(lits) < 2 {
		return nil, false
	}
	incr := 1
	if len(lits) > 2 {
		n, err := strconv.Atoi(lits[2])
		if err != nil || n == 0 {
			return nil, false
		}
		incr = max(n, -n)
	}
	var items []string
	a, errA := strconv.Atoi(lits[0])
	z, errZ := strconv.Atoi(lits[1])
	if errA == nil && errZ == nil {
		if (max(a, z)-min(a, z))/incr+1 > maxBraceWords {
			return nil, false
		}
		for i := a; ; {
			items = append(items, strconv.Itoa(i))
			if i == z || (a < z && i+incr > z) || (a > z && i-incr < z) {
				break
			}
			if a < z {
				i += incr
			} else {
				i -= incr
			}
		}
	} else {
		ra, _ := utf8.DecodeRuneInString(lits[0])
		rz, _ := utf8.DecodeRuneInString(lits[1])
		if len(lits[0]) != 1 || len(lits[1]) != 1 || (max(ra, rz)-min(ra, rz))/rune(incr)+1 > maxBraceWords {
			return nil, false
		}
		step := rune(incr)
		if ra > rz {
			step = -step
		}
		for r := ra; (step > 0 && r <= rz) || (step < 0 && r >= rz); r += step {
			items = append(items, string(r))
		}
	}
	alts := make([][]syntax.WordPart, len(items))
	for i, it := range items {
		alts[i] = []syntax.WordPart{&syntax.Lit{Value: it}}
	}
	return alts, true
}

// part adds one part of a word to b. quoted: inside double quotes;
// first: the word's first part (where ~ expands).
func (w *walker) part(b *fieldBuilder, p syntax.WordPart, quoted, first bool, fl *flow) {
	switch p := p.(type) {
	case *syntax.Lit:
		if quoted {
			b.add(unescapeDouble(p.Value), false, 0)
			return
		}
		s, glob := unescape(p.Value)
		if first && strings.HasPrefix(p.Value, "~") {
			s = w.tilde(s)
		}
		b.add(s, glob, 0)
	case *syntax.SglQuoted:
		s := p.Value
		if p.Dollar {
			s = ansiC(s)
		}
		b.add(s, false, 0)
	case *syntax.DblQuoted:
		b.add("", false, 0)
		for _, q := range p.Parts {
			w.part(b, q, true, false, fl)
		}
	case *syntax.ParamExp:
		v := w.param(p, fl)
		if quoted {
			b.add(v.s, false, v.t)
		} else {
			b.expansion(v)
		}
	case *syntax.CmdSubst:
		r := w.substitution(p.Stmts, fl)
		v := value{s: unknownStr, t: r.out}
		if r.text != nil {
			v.s = strings.TrimRight(*r.text, "\n")
		}
		if quoted {
			b.add(v.s, false, v.t)
		} else {
			b.expansion(v)
		}
	case *syntax.ArithmExp:
		w.arithm(p.X, fl)
		b.add(unknownStr, false, 0)
	case *syntax.ProcSubst:
		// A >( ) given as an argument reads what the command writes to
		// it: for tee, what the command reads.
		r := w.substitution(p.Stmts, fl)
		// The shell passes a pipe's path; what matters is what comes
		// through it.
		b.add("/dev/fd/63", false, r.out)
	case *syntax.ExtGlob:
		b.add(p.Op.String()+p.Pattern.Value+")", true, 0)
	default:
		b.add(unknownStr, false, 0)
	}
}

// tilde expands a leading ~ (the command's home) of s; ~user reads as
// unknown.
func (w *walker) tilde(s string) string {
	rest := s[1:]
	name, tail, _ := strings.Cut(rest, "/")
	switch {
	case name != "" && w.in.Home != "" && name == baseName(w.in.Home):
		// ~u for the user u whose home is /home/u.
		return w.in.Home + "/" + tail
	case name != "":
		return unknownStr + "/" + tail
	case w.in.Home == "":
		return unknownStr + rest
	}
	return w.in.Home + rest
}

// substitution walks the statements of a command or process
// substitution and says what it prints.
func (w *walker) substitution(stmts []*syntax.Stmt, fl *flow) result {
	if !w.enter() {
		return result{}
	}
	defer w.leave()
	sub := flow{stdin: fl.stdin, stdinText: fl.stdinText}
	return w.list(stmts, &sub)
}

// arithm walks an arithmetic expression for the substitutions in it.
func (w *walker) arithm(x syntax.ArithmExpr, fl *flow) {
	if x == nil || !w.spend(1) {
		return
	}
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		w.arithm(x.X, fl)
		w.arithm(x.Y, fl)
	case *syntax.UnaryArithm:
		w.arithm(x.X, fl)
	case *syntax.ParenArithm:
		w.arithm(x.X, fl)
	case *syntax.Word:
		w.fields(x, fl)
	}
}
