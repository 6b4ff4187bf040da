package app

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/landlock"
)

// Isolation labels of runs without a barrier.
const (
	isolationNone     = "none"
	isolationDegraded = "none (degraded)"
)

// choose applies the exec policy and picks the backend for p. It never
// returns a weaker backend than the one asked for: an isolating backend
// that is not usable is a refusal, not a fallback.
func (e *Engine) choose(ctx context.Context, p *plan) (backends.Backend, string, error) {
	pol := e.Policy()
	if p.refusal != nil {
		return nil, "", p.refusal
	}
	switch runtimeOf(p) {
	case "python":
		if !pol.RunPython {
			return nil, "", refused("Python execution is switched off (Security enforcement → Run Python); turn the switch on to run Python code")
		}
	case "node":
		if !pol.RunNode {
			return nil, "", refused("Node execution is switched off (Security enforcement → Run Node); turn the switch on to run Node code")
		}
	}
	if p.offPath || p.sb.Backend == "direct" {
		if err := e.refuseCredentialed(ctx, p); err != nil {
			return nil, "", err
		}
	}
	// Host exec: the tenant host policy decides whether (and how
	// confined) any principal but the owner runs on this machine, on the
	// switches' off paths and on the direct backend alike. (A direct
	// sandbox with allowDirect off is refused below, as always.)
	if (p.offPath && (p.req.Source == SourceAgentShell || p.req.Source == SourceScheduler)) ||
		(!p.offPath && p.sb.Backend == "direct" && e.Settings().AllowDirect) {
		if err := e.hostExecFor(ctx, p); err != nil {
			return nil, "", err
		}
	}
	if err := e.guardShell(ctx, p); err != nil {
		return nil, "", err
	}
	if p.hostConfined {
		b := e.probes.find(landlock.Name)
		if b == nil {
			return nil, "", refused("host exec is to be confined by Landlock, and the landlock backend is gone from this engine")
		}
		return b, isolationHostExec, nil
	}
	if p.offPath {
		b := e.probes.find("direct")
		if b == nil {
			return nil, "", refused("no direct backend is configured")
		}
		return b, isolationNone, nil
	}
	switch name := p.sb.Backend; name {
	case "direct":
		if !e.Settings().AllowDirect {
			return nil, "", refused("this sandbox asks for the direct backend, which runs code with no isolation, and allowDirect is off in the settings; use an isolating backend (bwrap, landlock, docker), or turn allowDirect on if you accept unconfined runs")
		}
		return e.probes.find("direct"), isolationDegraded, nil
	case "":
		b, seen := e.probes.best(ctx)
		if b == nil {
			var why []string
			for _, c := range seen {
				if c.Isolates {
					why = append(why, c.Backend+": "+c.Reason)
				}
			}
			reason := "no isolation is available on this machine, and nothing runs unconfined"
			if len(why) > 0 {
				reason += " (" + strings.Join(why, "; ") + ")"
			}
			return nil, "", refused("%s", reason)
		}
		return b, b.Name(), nil
	default:
		if en := p.sb.Engine; en != "" {
			// A sandbox on another machine's engine runs there or not at
			// all: never here instead.
			n := e.namedEngine(en)
			if n == nil {
				return nil, "", refused("this sandbox lives on engine %s, which is not in the settings any more; add the engine again to run here", en)
			}
			if c := e.engineCap(ctx, n); !c.Usable() {
				return nil, "", refused("this sandbox lives on engine %s, which is unreachable (its files stay there, and it is adopted again when the engine answers): %s", en, c.Reason)
			}
			return n.b, name, nil
		}
		b := e.probes.find(name)
		if b == nil {
			return nil, "", refused("this sandbox's backend %q is not available in this engine", name)
		}
		c := e.probes.probe(ctx, b, false)
		if !c.Usable() {
			return nil, "", refused("%s is not usable: %s", name, c.Reason)
		}
		return b, name, nil
	}
}

var (
	pythonWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(python[0-9.]*|pip[0-9.]*|ipython[0-9]*|pytest)$`) })
	nodeWord   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(node|nodejs|npm|npx|tsx|ts-node|yarn|pnpm)$`) })
)

// runtimeOf says whether p runs Python or Node code: a code run in that
// language, or a command whose first word is one of their interpreters or
// package managers. It only gives the early, clear refusal: a shell line
// that starts Python deeper inside is not recognised here, and is stopped
// in the sandbox, where the switched-off interpreters are masked
// (masks.go, Spec.Masked).
func runtimeOf(p *plan) string {
	switch p.req.Language {
	case "python":
		return "python"
	case "node":
		return "node"
	case "bash":
		return ""
	}
	var first string
	if len(p.req.Argv) > 0 {
		first = p.req.Argv[0]
	} else if f := strings.Fields(p.req.Command); len(f) > 0 {
		first = f[0]
		for i := 0; i < len(f)-1 && (f[i] == "env" || f[i] == "exec" || strings.Contains(f[i], "=")); i++ {
			first = f[i+1]
		}
	}
	base := filepath.Base(first)
	switch {
	case pythonWord().MatchString(base):
		return "python"
	case nodeWord().MatchString(base):
		return "node"
	}
	return ""
}
