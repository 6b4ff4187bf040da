package app

import (
	"fmt"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/netproxy"
	"github.com/senclaw/sandbox/app/safetext"
)

// A run's refusals: what its sandbox was refused while it ran (a
// connection, an HTTP request, a secret's placeholder sent where it does
// not go, a Unix socket, a write through the file API), each with the
// rule that refused it and one line on how to allow it, so that an agent
// can tell the person what to change. Every run of the sandbox that is
// going when a refusal happens gets it: the proxy and the guard know the
// sandbox, not which of its processes asked.

// Kinds of refusal (Refusal.Kind).
const (
	RefusedConnect = apitype.RefusedConnect
	RefusedHTTP    = apitype.RefusedHTTP
	RefusedSecret  = apitype.RefusedSecret
	RefusedUnix    = apitype.RefusedUnix
	RefusedWrite   = apitype.RefusedWrite
)

// maxRefusalsKept bounds a run's distinct refusals; more are counted in
// the last one's place ("... and N more").
const maxRefusalsKept = 32

// refusalLog hands each refusal of a sandbox to the runs of it going.
type refusalLog struct {
	mu   sync.Mutex
	runs map[string]map[*runRefusals]bool
}

// runRefusals are one run's refusals, in the order they first came.
type runRefusals struct {
	mu    sync.Mutex
	list  []Refusal
	extra int
}

// watch starts collecting sandbox id's refusals for a run; stop ends it.
func (l *refusalLog) watch(id string) *runRefusals {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string]map[*runRefusals]bool{}
	}
	if l.runs[id] == nil {
		l.runs[id] = map[*runRefusals]bool{}
	}
	w := &runRefusals{}
	l.runs[id][w] = true
	return w
}

func (l *refusalLog) stop(id string, w *runRefusals) {
	if w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.runs[id], w)
	if len(l.runs[id]) == 0 {
		delete(l.runs, id)
	}
}

// add gives r to every run of sandbox id going now.
func (l *refusalLog) add(id string, r Refusal) {
	l.mu.Lock()
	var ws []*runRefusals
	for w := range l.runs[id] {
		ws = append(ws, w)
	}
	l.mu.Unlock()
	for _, w := range ws {
		w.add(r)
	}
}

func (w *runRefusals) add(r Refusal) {
	// Hosts, paths and socket names are the sandbox's choice, and so is
	// what the rule and the way to allow it quote of them: escaped
	// before a terminal, an agent or a page sees them.
	for _, f := range []*string{&r.Host, &r.Method, &r.Path, &r.Target, &r.Rule, &r.Allow} {
		*f = safetext.Escape(*f)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.list {
		o := &w.list[i]
		if o.Kind == r.Kind && o.Host == r.Host && o.Port == r.Port && o.Method == r.Method && o.Path == r.Path && o.Target == r.Target && o.Rule == r.Rule {
			o.Count++
			return
		}
	}
	if len(w.list) >= maxRefusalsKept {
		w.extra++
		return
	}
	r.Count = 1
	w.list = append(w.list, r)
}

// result is the run's list; nil when nothing was refused.
func (w *runRefusals) result() []Refusal {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.list) == 0 {
		return nil
	}
	out := append([]Refusal{}, w.list...)
	if w.extra > 0 {
		out = append(out, Refusal{Kind: apitype.RefusedMore, Rule: fmt.Sprintf("%d more refusals of other kinds or targets were not kept", w.extra), Count: w.extra})
	}
	return out
}

// proxyRefused is the proxy's OnRefused: the refusal goes to the
// sandbox's runs.
func (e *Engine) proxyRefused(id string, r netproxy.Refusal) {
	e.refusals.add(id, Refusal{Kind: r.Kind, Host: r.Host, Port: r.Port, Method: r.Method, Path: r.Path, Rule: r.Rule, Allow: r.Allow})
}

// guardRefused is told of a connect the Unix socket guard refused a run
// of sandbox id (spec.Refused).
func (e *Engine) guardRefused(id, target string) {
	if path, ok := strings.CutPrefix(target, "unix:"); ok {
		allow := "only the owner can open a socket outside the sandbox's own places to every sandbox: the settings' allowedSockets (senclaw settings)"
		if strings.HasPrefix(path, "@") {
			allow = ""
		}
		e.refusals.add(id, Refusal{Kind: RefusedUnix, Target: path, Rule: "the Unix socket guard: the socket is not in the sandbox's workspace or private /tmp, nor in the settings' allowedSockets", Allow: allow})
		return
	}
	e.refusals.add(id, Refusal{Kind: RefusedConnect, Host: target, Rule: "the Unix socket guard of a run without a network namespace: only the door to the engine's proxy is reachable", Allow: "reach it through the proxy (HTTP_PROXY, ALL_PROXY), which applies the sandbox's network rules"})
}

// writeRefused records a write the file API refused into sandbox id.
func (e *Engine) writeRefused(id, path, why, allow string) {
	e.refusals.add(id, Refusal{Kind: RefusedWrite, Target: path, Rule: why, Allow: allow})
}
