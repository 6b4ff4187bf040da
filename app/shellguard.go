package app

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/senclaw/sandbox/app/guard"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/secevents"
)

// guardShell checks p's shell command with the shell guard (app/guard)
// before the run is given a backend. On the host (the documented off
// paths and the direct backend: nothing else stands between the command
// and the user's files) a match of a group that is on refuses the run;
// in a sandbox the guard.sandbox setting says what a match does: warn
// (the run goes on, and its record says what matched), deny, or off.
// The guard is advisory next to the sandbox: it only ever refuses or
// notes, and a run it passes is confined as it would be without it.
func (e *Engine) guardShell(ctx context.Context, p *plan) error {
	gs := e.Settings().Guard
	host := p.offPath || p.sb.Backend == "direct"
	mode := guard.ModeDeny
	if !host {
		mode = guard.Mode(gs.Sandbox)
	}
	if mode == guard.ModeOff {
		return nil
	}
	res := guardPlan(p, e.guardInput(p, gs))
	if !res.Denied() {
		return nil
	}
	f := res.First()
	if mode == guard.ModeWarn {
		for _, m := range res.Findings {
			p.guarded = append(p.guarded, fmt.Sprintf("%s: %s: %s", m.Group, m.Why, m.Part))
		}
		if !p.dryRun {
			e.guardEvent(ctx, guard.EventWarned, p, f)
		}
		return nil
	}
	if !p.dryRun {
		e.guardEvent(ctx, guard.EventDenied, p, f)
	}
	where := "on the host, where nothing else stands between the command and your files (" + e.hostPathName(p) + ")"
	if !host {
		where = "in this sandbox too, as guard.sandbox is deny"
	}
	return &RefusedError{
		Reason:    fmt.Sprintf("shell guard: %s: %s: %s; the guard refuses this %s; %s", f.Group, f.Why, f.Part, where, f.Advice),
		Isolation: "shell guard: " + string(f.Group),
	}
}

// hostPathName says which switch sent p to the host.
func (e *Engine) hostPathName(p *plan) string {
	switch {
	case !p.offPath:
		return "the direct backend"
	case p.req.Source == SourceAgentShell:
		return "the Agent shell switch is off"
	case p.req.Source == SourceScheduler:
		return "the Scheduler scripts switch is off"
	case p.launch != nil:
		return "an unsandboxed Space App"
	}
	return "a documented off path"
}

// guardInput is what the guard resolves p's words against: the HOME and
// working directory the command gets, its environment, and the engine's
// own dirs with the run's workspace let through.
func (e *Engine) guardInput(p *plan, gs GuardSettings) guard.Input {
	home := p.sb.Workspace
	if p.offPath && e.opts.HomeDir != "" {
		home = e.opts.HomeDir
	}
	cwd := p.cwd
	if cwd == "" {
		cwd = p.sb.Workspace
	}
	var env map[string]string
	if len(p.sb.Env)+len(p.req.Env) > 0 {
		env = maps.Clone(p.sb.Env)
		if env == nil {
			env = map[string]string{}
		}
		maps.Copy(env, p.req.Env)
	}
	allowed := e.guardAllowed()
	if p.sb.Workspace != "" {
		allowed = append([]string{p.sb.Workspace}, allowed...)
	}
	protected := e.guardProtected()
	if t := p.sb.Tenant; t != "" {
		// Another tenant's directory, and the paths granted to it, are
		// kept from a tenant's commands; its own granted paths are its.
		others, own := e.otherTenantDirs(t)
		protected = append(slices.Clone(protected), others...)
		allowed = append(allowed, own[1:]...)
	}
	return guard.Input{Off: guardOff(gs), Home: home, Cwd: cwd, Env: env, Protected: protected, Allowed: allowed}
}

// guardAllowed are the dirs in the engine's own that commands may name:
// its bin/, where the agent shell's SHELL wrapper is, which a command
// run by an agent started with SHELL= that wrapper names as $SHELL.
func (e *Engine) guardAllowed() []string {
	if e.paths.data == "" {
		return nil
	}
	return []string{filepath.Join(e.guardProtected()[0], "bin")}
}

// guardProtected are the engine's data, config and runtime dirs,
// canonical: what no command names. They do not change while the
// engine runs.
func (e *Engine) guardProtected() []string {
	e.guardOnce.Do(func() {
		for _, d := range []string{e.paths.data, e.paths.config, e.paths.runtime} {
			if d != "" {
				e.guardDirs = append(e.guardDirs, canonical(d))
			}
		}
	})
	return e.guardDirs
}

// guardOff lists the groups switched off.
func guardOff(g GuardSettings) []guard.Group {
	var off []guard.Group
	for grp, on := range map[guard.Group]bool{
		guard.PipeToInterpreter: g.PipeToInterpreter, guard.ForkBomb: g.ForkBomb, guard.ReverseShell: g.ReverseShell,
		guard.DecodeAndRun: g.DecodeAndRun, guard.EnvDump: g.EnvDump, guard.ProtectedPaths: g.ProtectedPaths, guard.Unreadable: g.Unreadable,
	} {
		if !on {
			off = append(off, grp)
		}
	}
	return off
}

func checkGuardSettings(g GuardSettings) error {
	switch guard.Mode(g.Sandbox) {
	case guard.ModeWarn, guard.ModeDeny, guard.ModeOff:
		return nil
	}
	return badField("guard.sandbox", g.Sandbox, "must be warn (run it and say what matched), deny or off; on the host the guard always refuses")
}

// guardEvent records what the guard refused or warned about as a
// security event of the run's principal (and in the log), which
// senclaw security-events, REST and the dashboard's card list.
func (e *Engine) guardEvent(ctx context.Context, kind string, p *plan, f guard.Finding) {
	detail := fmt.Sprintf("run %s (%s, sandbox %s): %s: %s", p.runID, p.req.Source, p.sb.ID, f.Group, f.Part)
	e.log.Warn("The shell guard matched a command.", "kind", kind, "run", p.runID, "source", p.req.Source, "group", string(f.Group), "part", f.Part)
	who := p.principal(ctx)
	e.security.Record(secevents.Event{
		Kind: kind, Principal: who.Label(), Tenant: p.sb.Tenant, Source: "engine",
		Request: fmt.Sprintf("%s run in sandbox %s: %s", p.req.Source, p.sb.ID, f.Part),
		Reason:  fmt.Sprintf("shell guard: %s: %s (run %s)", f.Group, f.Why, p.runID),
	})
	if r := e.opts.GuardEvents; r != nil {
		r.Record(kind, detail)
	}
}

// principal is who asked for p: the caller, or for a schedule's run the
// principal who last saved the schedule.
func (p *plan) principal(ctx context.Context) principal.Principal {
	if p.by != nil {
		return *p.by
	}
	return principal.Of(ctx)
}

// GuardCheck says what the shell guard does now with a command (or an
// argv) on a path, host or sandbox, with the settings of now; nothing
// runs. It is what senclaw guard check asks, for people writing allow
// lists; cwd, when given, is where relative paths resolve.
func (e *Engine) GuardCheck(command string, argv []string, path, cwd string) (guard.Report, error) {
	switch {
	case command == "" && len(argv) == 0:
		return guard.Report{}, badField("command", "", "give the command to check (or argv)")
	case command != "" && len(argv) > 0:
		return guard.Report{}, badField("command", command, "give a command or an argv, not both")
	}
	if path == "" {
		path = guard.PathHost
	}
	if path != guard.PathHost && path != guard.PathSandbox {
		return guard.Report{}, badField("path", path, "must be host (the documented off paths) or sandbox")
	}
	gs := e.Settings().Guard
	if cwd == "" {
		cwd = e.opts.HomeDir
	}
	in := guard.Input{Off: guardOff(gs), Home: e.opts.HomeDir, Cwd: cwd, Protected: e.guardProtected(), Allowed: e.guardAllowed()}
	return guard.NewReport(command, argv, in, path, guard.Mode(gs.Sandbox)), nil
}

// guardPlan reads what p runs as shell text (its command line, its bash
// code or its argv) with in; a run of other code has none to read.
func guardPlan(p *plan, in guard.Input) guard.Result {
	switch {
	case p.req.Command != "":
		return guard.Check(p.req.Command, in)
	case p.req.Language == "bash":
		return guard.Check(p.code, in)
	case len(p.req.Argv) > 0:
		return guard.CheckArgv(p.req.Argv, in)
	}
	return guard.Result{}
}
