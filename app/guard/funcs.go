package guard

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// funcDecl keeps a function for its calls, checks it for a fork bomb,
// and reads its body once as written (its arguments unknown), so that a
// function never called is read too.
func (w *walker) funcDecl(c *syntax.FuncDecl) {
	if c.Name == nil {
		return
	}
	name := c.Name.Value
	w.funcs[name] = c.Body
	if forkBomb(name, c.Body) {
		w.find(ForkBomb, c, fmt.Sprintf("the function %q starts itself twice at once (in a pipeline or in the background), so processes multiply until the machine stops", name))
	}
	pos, known := w.pos, w.posKnown
	w.pos, w.posKnown = nil, false
	w.callFunc(name, nil, &flow{})
	w.pos, w.posKnown = pos, known
}

// callFunc reads a function's body for one call; the same call (the
// same arguments, the same input) is read once.
func (w *walker) callFunc(name string, args []value, fl *flow) result {
	body := w.funcs[name]
	if w.calling[name] || body == nil {
		return result{out: fl.stdin}
	}
	key := name + "\x00" + fmt.Sprint(w.posKnown, fl.stdin, fl.xargs, fl.stdinText != nil)
	for _, a := range args {
		key += "\x00" + a.s
	}
	if t, ok := w.memo[key]; ok {
		return result{out: t}
	}
	if !w.enter() {
		return result{}
	}
	defer w.leave()
	w.calling[name] = true
	pos, known := w.pos, w.posKnown
	if args != nil || known {
		w.pos, w.posKnown = args, known
	}
	r := w.stmt(body, fl)
	w.pos, w.posKnown = pos, known
	delete(w.calling, name)
	w.memo[key] = r.out
	return r
}

// forkBomb reports whether the function name's body starts name twice
// or more, once at least without waiting for it (in a pipeline, or in
// the background): f & f multiplies as f | f does, since the call that
// is waited for starts one more in the background at each level. Two
// calls one after the other (a tree walked) are a recursion, not a bomb.
func forkBomb(name string, body *syntax.Stmt) bool {
	calls, parallelCalls := 0, 0
	var walk func(s *syntax.Stmt, parallel bool, depth int)
	walk = func(s *syntax.Stmt, parallel bool, depth int) {
		if s == nil || depth > maxNesting*4 || (calls >= 2 && parallelCalls >= 1) {
			return
		}
		parallel = parallel || s.Background || s.Coprocess
		switch c := s.Cmd.(type) {
		case *syntax.CallExpr:
			if len(c.Args) > 0 && litWord(c.Args[0]) == name {
				calls++
				if parallel {
					parallelCalls++
				}
			}
		case *syntax.BinaryCmd:
			pipe := c.Op == syntax.Pipe || c.Op == syntax.PipeAll
			walk(c.X, parallel || pipe, depth+1)
			walk(c.Y, parallel || pipe, depth+1)
		case *syntax.Block:
			for _, t := range c.Stmts {
				walk(t, parallel, depth+1)
			}
		case *syntax.Subshell:
			for _, t := range c.Stmts {
				walk(t, parallel, depth+1)
			}
		case *syntax.IfClause:
			for ic := c; ic != nil; ic = ic.Else {
				for _, t := range append(slices.Clone(ic.Cond), ic.Then...) {
					walk(t, parallel, depth+1)
				}
			}
		case *syntax.WhileClause:
			for _, t := range append(slices.Clone(c.Cond), c.Do...) {
				walk(t, parallel, depth+1)
			}
		case *syntax.ForClause:
			for _, t := range c.Do {
				walk(t, parallel, depth+1)
			}
		case *syntax.CaseClause:
			for _, it := range c.Items {
				for _, t := range it.Stmts {
					walk(t, parallel, depth+1)
				}
			}
		case *syntax.TimeClause:
			walk(c.Stmt, parallel, depth+1)
		}
	}
	walk(body, false, 0)
	return calls >= 2 && parallelCalls >= 1
}

// litWord is a word's text with its quotes and backslashes taken out,
// "" when any part is an expansion.
func litWord(word *syntax.Word) string {
	var b strings.Builder
	for _, p := range word.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			s, _ := unescape(p.Value)
			b.WriteString(s)
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return ""
				}
				b.WriteString(unescapeDouble(l.Value))
			}
		default:
			return ""
		}
	}
	return b.String()
}
