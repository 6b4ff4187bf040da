package app

import (
	"context"
	"errors"

	"github.com/senclaw/sandbox/app/policyfile"
	"github.com/senclaw/sandbox/app/principal"
)

// PolicyCheck says, running nothing, what the layered policy makes of
// req's command in req's project: the effective policy with the source
// of every value, the project's ignored keys, and whether the run would
// be refused (the fs mode, the backends, the exec policy, the shell
// guard) and why. A broken policy file is an answer (BrokenFile), not an
// error; a bad project dir or command is.
func (e *Engine) PolicyCheck(ctx context.Context, req PolicyCheckRequest) (*PolicyCheck, error) {
	out := &PolicyCheck{Values: []PolicyValue{}, Notes: []string{}}
	broken := func(err error) (*PolicyCheck, error) {
		var pe *policyfile.Error
		if !errors.As(err, &pe) {
			return nil, err
		}
		out.BrokenFile = &PolicyFileProblem{File: pe.File, Line: pe.Line, Column: pe.Column, Message: pe.Msg}
		out.Refusal = pe.Error()
		return out, nil
	}
	owner, err := e.OwnerPolicy()
	out.Owner = e.ownerPolicyPath()
	if err != nil {
		return broken(err)
	}
	out.Owner = owner.Path
	tenant := principal.Of(ctx).Tenant
	cfg := SandboxConfig{}
	base := owner
	if req.AgentShell {
		base = agentBase(owner)
	}
	eff := policyfile.Merge(base, nil)
	if req.ProjectDir != "" {
		dir, err := e.checkTenantDir("projectDir", req.ProjectDir, tenant, true)
		if err != nil {
			return nil, err
		}
		cfg.ProjectDir = &dir
		var project *policyfile.Layer
		if eff, project, err = effectivePolicy(dir, base); err != nil {
			return broken(err)
		}
		if project != nil {
			out.Project = project.Path
		}
	}
	for _, v := range eff.Values {
		out.Values = append(out.Values, PolicyValue{Key: v.Key, Value: v.Value, Source: v.Source})
	}
	out.Notes = append(out.Notes, eff.Notes...)
	if req.Command == "" && len(req.Argv) == 0 {
		out.Allowed = true
		return out, nil
	}
	p, err := e.checkPlan(ctx, cfg, req)
	var fe *FieldError
	switch {
	case errors.As(err, &fe) && fe.Field == "projectDir":
		// The project the run would write is refused (the sandbox
		// user cannot write it, ...): so would the run be.
		out.Refusal = err.Error()
		return out, nil
	case err != nil:
		return nil, err
	}
	if len(p.policyNotes) > len(eff.Notes) {
		out.Notes = append(out.Notes, p.policyNotes[len(eff.Notes):]...) // what it takes down
	}
	_, isolation, err := e.choose(ctx, p)
	var r *RefusedError
	switch {
	case errors.As(err, &r):
		out.Refusal = r.Reason
	case err != nil:
		return nil, err
	default:
		out.Allowed, out.Isolation = true, isolation
	}
	return out, nil
}

// checkPlan is the plan the run would have, made as RunOnce (--here) or
// AgentShell would make it, but stored nowhere.
func (e *Engine) checkPlan(ctx context.Context, cfg SandboxConfig, req PolicyCheckRequest) (*plan, error) {
	tenant := principal.Of(ctx).Tenant
	var sb Sandbox
	source := SourceCLI
	pol := e.Policy()
	if req.AgentShell {
		source = SourceAgentShell
		// The project's stored agent sandbox, as the agent shell would
		// run in it (its backend, limits, mounts), or the one it would
		// make.
		dir := ""
		if cfg.ProjectDir != nil {
			dir = *cfg.ProjectDir
		}
		var err error
		if sb, err = e.agentSandboxView(dir, tenant, pol); err != nil {
			return nil, err
		}
	} else {
		var err error
		if sb, err = e.newSandboxFor(tenant, cfg); err != nil {
			return nil, err
		}
		sb.Kind = "oneshot"
	}
	var notes []string
	var policyErr error
	if cfg.ProjectDir != nil && (!req.AgentShell || pol.ExecShell) {
		notes, policyErr = e.applyProjectPolicy(&sb, nil, req.AgentShell, SandboxConfig{})
	}
	p, err := e.planFor(&sb, RunRequest{Source: source, Command: req.Command, Argv: req.Argv})
	if err != nil {
		return nil, err
	}
	p.dryRun, p.policyNotes = true, notes
	p.offPath = req.AgentShell && !pol.ExecShell
	if policyErr != nil {
		p.refusal = asRefusal(policyErr)
	}
	return p, nil
}
