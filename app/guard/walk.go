package guard

import (
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Limits of one check, past which the command is Unreadable.
const (
	// maxDepth bounds the shells within shells (sh -c, eval, functions,
	// substitutions) the guard follows.
	maxDepth = 16
	// maxWrappers bounds the wrappers around one command.
	maxWrappers = 8
	// workPerByte and baseWork budget the nodes, words and bytes read
	// in all: a command whose expansions would take more is refused.
	workPerByte = 16
	baseWork    = 1 << 16
)

// flow is what a command's input carries.
type flow struct {
	// stdin is what the command's standard input carries.
	stdin taint
	// stdinText is the text fed to it, when known (echo x |, <<<,
	// a here-document).
	stdinText *string
	// xargs is what xargs reads into the command's arguments.
	xargs taint
	// pipe is the text of the pipeline the command's stdin comes
	// through, for the findings about what it is fed.
	pipe string
}

// result is what a command prints.
type result struct {
	out taint
	// text is what it prints, when known: an echo or printf of
	// constants.
	text *string
}

// walker reads one command line. It is not safe for concurrent use.
type walker struct {
	in     *Input
	script *Script
	// src is the text being read: parts are sliced from it.
	src     string
	vars    map[string]value
	funcs   map[string]*syntax.Stmt
	aliases map[string]string
	// pos and arg0 are the positional parameters; posKnown is false in
	// a function's body read at its definition.
	pos      []value
	posKnown bool
	arg0     string
	cwd      string
	via      []string
	calling  map[string]bool
	memo     map[string]taint
	depth    int
	budget   int
	spent    bool
	started  bool
}

func newWalker(in *Input, s *Script) *walker {
	return &walker{
		in: in, script: s,
		vars: map[string]value{}, funcs: map[string]*syntax.Stmt{}, aliases: map[string]string{},
		posKnown: true, arg0: "sh", cwd: in.Cwd,
		calling: map[string]bool{}, memo: map[string]taint{},
		budget: baseWork,
	}
}

// find records a finding of group at node (the whole text being read
// when node is nil).
func (w *walker) find(g Group, node syntax.Node, why string) {
	w.findText(g, w.text(node), why)
}

func (w *walker) findText(g Group, text, why string) {
	key := string(g) + "\x00" + text
	if w.script.seen == nil {
		w.script.seen = map[string]bool{}
	}
	if w.script.seen[key] || len(w.script.findings) >= maxFindings {
		return
	}
	w.script.seen[key] = true
	w.script.findings = append(w.script.findings, Finding{Group: g, Part: part(text), Why: why})
}

// text is the source of node in what is being read.
func (w *walker) text(node syntax.Node) string {
	if node == nil || !node.Pos().IsValid() {
		return w.src
	}
	a, b := int(node.Pos().Offset()), int(node.End().Offset())
	if a < 0 || b > len(w.src) || a > b {
		return w.src
	}
	return w.src[a:b]
}

// spend takes n units of work from the budget; false (and an
// Unreadable finding, once) when it is gone.
func (w *walker) spend(n int) bool {
	w.budget -= n
	if w.budget >= 0 {
		return true
	}
	if !w.spent {
		w.spent = true
		w.findText(Unreadable, w.src, "its expansions are more than the guard reads")
	}
	return false
}

// enter goes one level deeper (a shell in a shell, a substitution);
// false past maxDepth.
func (w *walker) enter() bool {
	if w.depth >= maxDepth {
		w.findText(Unreadable, w.src, fmt.Sprintf("it nests shells and substitutions deeper than %d levels", maxDepth))
		return false
	}
	w.depth++
	return true
}

func (w *walker) leave() { w.depth-- }

var parsers = sync.Pool{New: func() any { return syntax.NewParser() }}

// shell parses code and reads it as a shell of the lang variant would.
func (w *walker) shell(code string, fl *flow, lang syntax.LangVariant) result {
	code = normalise(code)
	if len(code) > MaxInput {
		w.findText(Unreadable, code, fmt.Sprintf("it is longer than the %d KiB the guard reads", MaxInput>>10))
		return result{}
	}
	if tooDeep(code, maxNesting) {
		w.findText(Unreadable, code, fmt.Sprintf("it nests deeper than %d levels", maxNesting))
		return result{}
	}
	src := w.src
	w.src = code
	defer func() { w.src = src }()
	if w.depth == 0 && !w.started {
		// The whole budget follows the size of what is read first.
		w.started = true
		w.budget += len(code) * workPerByte
	}
	if !w.spend(len(code)/4 + 1) {
		return result{}
	}
	p := parsers.Get().(*syntax.Parser)
	syntax.Variant(lang)(p)
	f, err := p.Parse(strings.NewReader(code), "")
	parsers.Put(p)
	if err != nil {
		w.findText(Unreadable, code, "the guard cannot parse it: "+err.Error())
		return result{}
	}
	return w.list(f.Stmts, fl)
}

// list reads statements in order; what they print is their output
// together, known only for a single statement.
func (w *walker) list(stmts []*syntax.Stmt, fl *flow) result {
	var r result
	for _, s := range stmts {
		sr := w.stmt(s, fl)
		r.out |= sr.out
		r.text = sr.text
	}
	if len(stmts) != 1 {
		r.text = nil
	}
	return r
}

func (w *walker) stmt(s *syntax.Stmt, fl *flow) result {
	if s == nil || !w.spend(1) {
		return result{}
	}
	local := *fl
	var sinks []*syntax.ProcSubst
	for _, r := range s.Redirs {
		if ps := outputSubst(r); ps != nil {
			sinks = append(sinks, ps)
			continue
		}
		w.redirect(r, &local, s)
	}
	r := w.command(s.Cmd, &local, s)
	// cmd > >(sh): what the command prints is the substitution's stdin.
	for _, ps := range sinks {
		if w.enter() {
			w.list(ps.Stmts, &flow{stdin: r.out, stdinText: r.text, pipe: w.text(s)})
			w.leave()
		}
	}
	if len(s.Redirs) > 0 {
		r.text = nil // its output went elsewhere, or changed
	}
	return r
}

func (w *walker) command(cmd syntax.Command, fl *flow, s *syntax.Stmt) result {
	switch c := cmd.(type) {
	case nil:
		return result{}
	case *syntax.CallExpr:
		return w.call(c, fl, s)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			return w.pipeline(s, fl)
		}
		return w.chain(c, fl)
	case *syntax.Subshell:
		cwd := w.cwd
		defer func() { w.cwd = cwd }()
		return w.list(c.Stmts, fl)
	case *syntax.Block:
		return w.list(c.Stmts, fl)
	case *syntax.IfClause:
		var r result
		for ic := c; ic != nil; ic = ic.Else {
			r.out |= w.list(ic.Cond, fl).out | w.list(ic.Then, fl).out
		}
		return r
	case *syntax.WhileClause:
		return result{out: w.list(c.Cond, fl).out | w.list(c.Do, fl).out}
	case *syntax.ForClause:
		return w.forLoop(c, fl)
	case *syntax.CaseClause:
		w.fields(c.Word, fl)
		var r result
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.fields(p, fl)
			}
			r.out |= w.list(item.Stmts, fl).out
		}
		return r
	case *syntax.FuncDecl:
		w.funcDecl(c)
	case *syntax.ArithmCmd:
		w.arithm(c.X, fl)
	case *syntax.LetClause:
		for _, x := range c.Exprs {
			w.arithm(x, fl)
		}
	case *syntax.TestClause:
		w.test(c.X, fl)
	case *syntax.DeclClause:
		return w.decl(c, fl, s)
	case *syntax.TimeClause:
		w.via = append(w.via, "time")
		defer func() { w.via = w.via[:len(w.via)-1] }()
		return w.stmt(c.Stmt, fl)
	case *syntax.CoprocClause:
		return w.stmt(c.Stmt, fl)
	}
	return result{}
}

// chain reads a && b || c ... in order, without recursing per operator:
// a long chain is a deep tree.
func (w *walker) chain(c *syntax.BinaryCmd, fl *flow) result {
	var right []*syntax.Stmt
	left := c
	for {
		right = append(right, left.Y)
		x, ok := left.X.Cmd.(*syntax.BinaryCmd)
		if !ok || x.Op == syntax.Pipe || x.Op == syntax.PipeAll || len(left.X.Redirs) > 0 || left.X.Background || left.X.Negated {
			break
		}
		left = x
	}
	r := w.stmt(left.X, fl)
	for i := len(right) - 1; i >= 0; i-- {
		r.out |= w.stmt(right[i], fl).out
	}
	r.text = nil
	return r
}

// pipeline reads a | b | c: each stage's stdin carries what the stages
// before it printed.
func (w *walker) pipeline(s *syntax.Stmt, fl *flow) result {
	stages := pipeStages(s)
	carried := fl.stdin
	var r result
	for i, st := range stages {
		sfl := flow{stdin: carried, stdinText: r.text, pipe: w.text(s)}
		if i == 0 {
			sfl = *fl
		}
		r = w.stmt(st, &sfl)
		carried |= r.out
	}
	return result{out: carried, text: r.text}
}

// pipeStages flattens a pipeline; its own redirections were applied.
func pipeStages(s *syntax.Stmt) []*syntax.Stmt {
	var out []*syntax.Stmt
	stack := []*syntax.Stmt{s}
	for len(stack) > 0 {
		st := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if bc, ok := st.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) && (st == s || (len(st.Redirs) == 0 && !st.Negated && !st.Background)) {
			stack = append(stack, bc.Y, bc.X)
			continue
		}
		out = append(out, st)
	}
	return out
}

// forLoop reads a for loop; a loop over at most four known words reads
// its body once for each, with the variable set.
func (w *walker) forLoop(c *syntax.ForClause, fl *flow) result {
	switch l := c.Loop.(type) {
	case *syntax.WordIter:
		var items []value
		for _, it := range l.Items {
			items = append(items, w.fields(it, fl)...)
		}
		name := l.Name.Value
		if len(items) == 0 || len(items) > 4 {
			w.vars[name] = unknownValue
			return w.list(c.Do, fl)
		}
		var r result
		for _, it := range items {
			w.vars[name] = it
			r.out |= w.list(c.Do, fl).out
		}
		return r
	case *syntax.CStyleLoop:
		w.arithm(l.Init, fl)
		w.arithm(l.Cond, fl)
		w.arithm(l.Post, fl)
	}
	return w.list(c.Do, fl)
}

func (w *walker) test(x syntax.TestExpr, fl *flow) {
	if x == nil || !w.spend(1) {
		return
	}
	switch x := x.(type) {
	case *syntax.BinaryTest:
		w.test(x.X, fl)
		w.test(x.Y, fl)
	case *syntax.UnaryTest:
		w.test(x.X, fl)
	case *syntax.ParenTest:
		w.test(x.X, fl)
	case *syntax.Word:
		w.checkPaths(w.fields(x, fl), x)
	}
}

// call reads a simple command: its assignments, then the program its
// words name.
func (w *walker) call(c *syntax.CallExpr, fl *flow, s *syntax.Stmt) result {
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			w.assign(a, fl)
		}
		return result{}
	}
	// Assignments before a command are its environment; reading them
	// into the line's variables lets sh -c '$X' see them.
	for _, a := range c.Assigns {
		w.assign(a, fl)
	}
	var args []value
	for _, word := range c.Args {
		args = append(args, w.fields(word, fl)...)
	}
	return w.run(args, fl, s)
}

func (w *walker) assign(a *syntax.Assign, fl *flow) {
	if a.Name == nil {
		return
	}
	var v value
	switch {
	case a.Array != nil:
		var parts []string
		for _, e := range a.Array.Elems {
			for _, f := range w.fields(e.Value, fl) {
				parts = append(parts, f.s)
				v.t |= f.t
			}
		}
		v.s = strings.Join(parts, " ")
	case a.Value != nil:
		v = w.literal(a.Value, fl)
		w.checkPaths([]value{v}, a.Value)
	}
	if a.Index != nil {
		w.arithm(a.Index, fl)
		v = unknownValue
	}
	if a.Append {
		old, _ := w.lookup(a.Name.Value)
		v = value{s: old.s + v.s, t: old.t | v.t}
	}
	w.vars[a.Name.Value] = v
}

// decl reads export, declare, local, readonly, typeset: assignments, or
// with no name a listing of the variables.
func (w *walker) decl(c *syntax.DeclClause, fl *flow, s *syntax.Stmt) result {
	argv := []string{c.Variant.Value}
	names := 0
	listing := false
	for _, a := range c.Args {
		switch {
		case a.Naked && a.Name == nil:
			for _, f := range w.fields(a.Value, fl) {
				argv = append(argv, f.s)
				if strings.HasPrefix(f.s, "-") && strings.ContainsAny(f.s, "px") {
					listing = true
				}
			}
		case a.Naked:
			names++
			argv = append(argv, a.Name.Value)
		default:
			names++
			w.assign(a, fl)
			argv = append(argv, a.Name.Value+"=…")
		}
	}
	w.record(Invocation{Name: c.Variant.Value, Argv: argv, Via: w.viaCopy(), Part: part(w.text(s))})
	if names == 0 || (listing && names == 0) {
		return result{out: tEnv}
	}
	return result{}
}
