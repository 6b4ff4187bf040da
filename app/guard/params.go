package guard

import (
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// param expands a parameter: the constants the command line assigns,
// its home and cwd, the run's environment; anything else is unknown.
func (w *walker) param(p *syntax.ParamExp, fl *flow) value {
	if p.Index != nil {
		w.arithm(p.Index, fl)
	}
	if p.Param == nil || p.Excl || p.Index != nil || p.Names != 0 || p.NestedParam != nil {
		return unknownValue
	}
	v, set := w.lookup(p.Param.Value)
	switch {
	case p.Length:
		if !v.known() {
			return unknownValue
		}
		return value{s: strconv.Itoa(utf8.RuneCountInString(v.s))}
	case p.Slice != nil:
		return w.slice(v, p.Slice, fl)
	case p.Repl != nil:
		orig := w.literal(p.Repl.Orig, fl)
		with := w.literal(p.Repl.With, fl)
		if !v.known() || !orig.known() || !with.known() || strings.ContainsAny(orig.s, "*?[") || orig.s == "" {
			return unknownValue
		}
		n := 1
		if p.Repl.All {
			n = -1
		}
		return value{s: strings.Replace(v.s, orig.s, with.s, n), t: v.t | with.t}
	case p.Exp != nil:
		return w.expansionOp(p, v, set, fl)
	}
	return v
}

func (w *walker) slice(v value, s *syntax.Slice, fl *flow) value {
	w.arithm(s.Offset, fl)
	w.arithm(s.Length, fl)
	if !v.known() {
		return unknownValue
	}
	r := []rune(v.s)
	off, ok := arithmInt(s.Offset)
	if !ok {
		return unknownValue
	}
	if off < 0 {
		off += len(r)
	}
	off = min(max(off, 0), len(r))
	end := len(r)
	if s.Length != nil {
		n, ok := arithmInt(s.Length)
		if !ok {
			return unknownValue
		}
		if n < 0 {
			end = max(len(r)+n, off)
		} else {
			end = min(off+n, len(r))
		}
	}
	return value{s: string(r[off:end]), t: v.t}
}

// arithmInt is the value of a literal integer (a slice's offset).
func arithmInt(x syntax.ArithmExpr) (int, bool) {
	switch x := x.(type) {
	case *syntax.Word:
		n, err := strconv.Atoi(x.Lit())
		return n, err == nil
	case *syntax.UnaryArithm:
		if x.Op == syntax.Minus {
			n, ok := arithmInt(x.X)
			return -n, ok
		}
	case *syntax.ParenArithm:
		return arithmInt(x.X)
	}
	return 0, false
}

// expansionOp applies ${a:-b}, ${a#b} and their kind.
func (w *walker) expansionOp(p *syntax.ParamExp, v value, set bool, fl *flow) value {
	arg := w.literal(p.Exp.Word, fl)
	empty := v.known() && v.s == ""
	switch p.Exp.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		// An unknown variable reads as unset here: the default is what
		// the writer meant to run.
		useArg := !set || (empty && (p.Exp.Op == syntax.DefaultUnsetOrNull || p.Exp.Op == syntax.AssignUnsetOrNull))
		if !useArg {
			return v
		}
		if p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull {
			w.vars[p.Param.Value] = arg
		}
		return arg
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
		if !set || (empty && p.Exp.Op == syntax.AlternateUnsetOrNull) {
			return value{}
		}
		return arg
	case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		return v
	case syntax.RemSmallPrefix, syntax.RemLargePrefix, syntax.RemSmallSuffix, syntax.RemLargeSuffix:
		if !v.known() || !arg.known() {
			return unknownValue
		}
		s, ok := trimPattern(v.s, arg.s, p.Exp.Op)
		if !ok {
			return unknownValue
		}
		return value{s: s, t: v.t}
	case syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
		if !v.known() {
			return unknownValue
		}
		f := unicode.ToUpper
		if p.Exp.Op == syntax.LowerFirst || p.Exp.Op == syntax.LowerAll {
			f = unicode.ToLower
		}
		if p.Exp.Op == syntax.UpperAll || p.Exp.Op == syntax.LowerAll {
			return value{s: strings.Map(f, v.s), t: v.t}
		}
		r, size := utf8.DecodeRuneInString(v.s)
		if size == 0 {
			return v
		}
		return value{s: string(f(r)) + v.s[size:], t: v.t}
	}
	return unknownValue
}

// trimPattern removes a prefix or suffix matching the glob pat, as
// ${s#pat}, ${s##pat}, ${s%pat} and ${s%%pat} do.
func trimPattern(s, pat string, op syntax.ParExpOperator) (string, bool) {
	if len(s) > 4096 {
		return "", false
	}
	var cuts []int
	for i := 0; i <= len(s); i++ {
		if i < len(s) && !utf8.RuneStart(s[i]) {
			continue
		}
		cuts = append(cuts, i)
	}
	match := func(t string) bool {
		ok, err := path.Match(pat, t)
		return err == nil && ok
	}
	switch op {
	case syntax.RemSmallPrefix:
		for _, i := range cuts {
			if match(s[:i]) {
				return s[i:], true
			}
		}
	case syntax.RemLargePrefix:
		for j := len(cuts) - 1; j >= 0; j-- {
			if match(s[:cuts[j]]) {
				return s[cuts[j]:], true
			}
		}
	case syntax.RemSmallSuffix:
		for j := len(cuts) - 1; j >= 0; j-- {
			if match(s[cuts[j]:]) {
				return s[:cuts[j]], true
			}
		}
	case syntax.RemLargeSuffix:
		for _, i := range cuts {
			if match(s[i:]) {
				return s[:i], true
			}
		}
	}
	return s, true
}

// lookup is a parameter's value and whether it is set.
func (w *walker) lookup(name string) (value, bool) {
	if v, ok := w.vars[name]; ok {
		return v, true
	}
	switch name {
	case "0":
		return value{s: w.arg0}, true
	case "@", "*":
		if !w.posKnown {
			return unknownValue, true
		}
		parts := make([]string, len(w.pos))
		var t taint
		for i, p := range w.pos {
			parts[i] = p.s
			t |= p.t
		}
		return value{s: strings.Join(parts, " "), t: t}, len(w.pos) > 0
	case "#":
		if !w.posKnown {
			return unknownValue, true
		}
		return value{s: strconv.Itoa(len(w.pos))}, true
	case "HOME":
		if w.in.Home != "" {
			return value{s: w.in.Home}, true
		}
	case "PWD":
		if w.cwd != "" {
			return value{s: w.cwd}, true
		}
	case "IFS":
		return value{s: " \t\n"}, true
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 {
		if !w.posKnown {
			return unknownValue, true
		}
		if n <= len(w.pos) {
			return w.pos[n-1], true
		}
		return value{}, false
	}
	if v, ok := w.in.Env[name]; ok {
		return value{s: v}, true
	}
	return unknownValue, false
}
