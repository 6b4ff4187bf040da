package guard

import (
	"mvdan.cc/sh/v3/syntax"
	"strings"
)

// outputSubst is the >( ) a redirection of output writes to, if any.
func outputSubst(r *syntax.Redirect) *syntax.ProcSubst {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.DplOut:
	default:
		return nil
	}
	if r.Word == nil || len(r.Word.Parts) != 1 {
		return nil
	}
	ps, ok := r.Word.Parts[0].(*syntax.ProcSubst)
	if !ok || ps.Op != syntax.CmdOut {
		return nil
	}
	return ps
}

// redirect applies one redirection: what it feeds stdin, and the paths
// and sockets it names.
func (w *walker) redirect(r *syntax.Redirect, fl *flow, s *syntax.Stmt) {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		v := w.heredoc(r, fl)
		w.feed(fl, v)
		return
	case syntax.WordHdoc:
		v := w.literal(r.Word, fl)
		v.s += "\n"
		w.feed(fl, v)
		return
	}
	v := w.literal(r.Word, fl)
	if isDevSocket(w.resolve(v.s)) {
		w.find(ReverseShell, s, "it redirects to a network socket (/dev/tcp, /dev/udp)")
	}
	w.checkPaths([]value{v}, r.Word)
	switch r.Op {
	case syntax.RdrIn, syntax.RdrInOut:
		t := v.t
		if isDevSocket(w.resolve(v.s)) {
			t |= tNet
		}
		if r.N == nil || r.N.Value == "0" {
			fl.stdin, fl.stdinText, fl.pipe = t, nil, ""
		}
	case syntax.DplIn:
		if r.N == nil || r.N.Value == "0" {
			fl.stdinText = nil
		}
	}
}

func (w *walker) feed(fl *flow, v value) {
	fl.pipe = ""
	fl.stdin = v.t
	fl.stdinText = nil
	if v.known() {
		s := v.s
		fl.stdinText = &s
	}
}

// heredoc is the body of a here-document: as written when its
// delimiter is quoted, else expanded.
func (w *walker) heredoc(r *syntax.Redirect, fl *flow) value {
	if r.Hdoc == nil {
		return value{}
	}
	quoted := false
	for _, p := range r.Word.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			quoted = true
		case *syntax.Lit:
			quoted = quoted || strings.Contains(p.Value, `\`)
		}
	}
	if quoted {
		var b strings.Builder
		for _, p := range r.Hdoc.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				b.WriteString(l.Value)
			}
		}
		return value{s: b.String()}
	}
	b := fieldBuilder{noSplit: true, ifs: w.ifs()}
	for _, p := range r.Hdoc.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.add(unescapeDouble(l.Value), false, 0)
			continue
		}
		w.part(&b, p, true, false, fl)
	}
	b.flush()
	if len(b.out) == 0 {
		return value{}
	}
	return b.out[0]
}
