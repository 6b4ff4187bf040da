package app

import (
	"context"
	"fmt"
	"time"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/secevents"
)

// The tenant host policy (the setting exec.tenantHostPolicy, which
// SENCLAW_EXEC_TENANT_HOST_POLICY overrides) is the one rule of who may
// run a command on this machine with no sandbox: a documented off path
// (the Agent shell or Scheduler scripts switch off, where a command runs
// as the engine's user) and a sandbox on the direct backend (which
// allowDirect lets a sandbox ask for). The owner always may, with
// nothing in the way: the switches and allowDirect are its to turn.
// Every other principal's command runs, where Landlock can, under
// a Landlock domain of its own (hostconfine.go): its project and its
// tenant's directory to write, the system roots to read, nothing else.
// deny refuses it; warn runs it so confined and records
// security.exec_tenant_host_would_deny (at most every hostWarnEvery);
// allow runs it so confined. Where Landlock is not available, warn runs
// an agent's (or app's) command unconfined with the event and refuses a
// tenant's, and allow runs it unconfined unless it names a tenant's
// directory.
const (
	HostPolicyDeny  = "deny"
	HostPolicyWarn  = "warn"
	HostPolicyAllow = "allow"
)

// The security events of the tenant host policy.
const (
	EventTenantHostWouldDeny = "security.exec_tenant_host_would_deny"
	EventTenantHostDenied    = "security.exec_tenant_host_denied"
)

// CheckTenantHostPolicy refuses a tenant host policy that is not one.
func CheckTenantHostPolicy(field, v string) error {
	switch v {
	case HostPolicyDeny, HostPolicyWarn, HostPolicyAllow:
		return nil
	}
	return badField(field, v, "must be deny (host exec only for the owner), warn (others' runs confined by Landlock, with a security event) or allow")
}

// tenantHostPolicy is the policy now: the environment's, else the
// setting's.
func (e *Engine) tenantHostPolicy() string {
	if v := e.opts.TenantHostPolicy; v != "" {
		return v
	}
	if v := e.Settings().Exec.TenantHostPolicy; v != "" {
		return v
	}
	return HostPolicyWarn
}

// hostExec applies the tenant host policy to who, whose command a switch
// (named by path) sends to the host. It says whether the command runs
// confined (under Landlock); a refusal is recorded. With record, the
// warnings are recorded too (a run; a check records nothing but its
// refusal).
func (e *Engine) hostExec(ctx context.Context, who principal.Principal, path, request string, record bool) (confined bool, err error) {
	if who.IsOwner() {
		return false, nil
	}
	pol := e.tenantHostPolicy()
	conf := e.hostConfinement(ctx, record)
	as, own := "the engine's user", "its project"
	if path == pathDirect {
		own = "its workspace"
		if e.opts.EUID == 0 {
			// (The direct backend runs a root engine's sandbox as its
			// own uid.)
			as = "its sandbox's own user"
		}
	}
	where := fmt.Sprintf("%s, so this command would run on this machine as %s", path, as)
	if conf.ok {
		where += ", confined by Landlock (" + own + " and its tenant's directory to write, the system roots to read)"
	} else {
		where += " with no sandbox (Landlock is not available for host exec: " + conf.why + ")"
	}
	if hostOutcome(pol, conf.ok, who.Tenant) != hostRunRefused {
		if pol == HostPolicyWarn && record && e.firstHostWarning(who.Label()+" "+path) {
			e.security.Record(secevents.Event{
				Kind: EventTenantHostWouldDeny, Principal: who.Label(), Tenant: who.Tenant, Source: "engine", Request: request,
				Reason: fmt.Sprintf("%s; exec.tenantHostPolicy is warn, so it runs; deny would refuse it", where),
			})
		}
		return conf.ok, nil
	}
	why := fmt.Sprintf("exec.tenantHostPolicy is deny, which keeps host exec for the owner, and this is %s", who)
	if pol == HostPolicyWarn {
		why = fmt.Sprintf("this is %s, and under exec.tenantHostPolicy warn a tenant's commands never run unconfined on the host, where they would reach every other tenant's directory", who)
	}
	e.security.Record(secevents.Event{
		Kind: EventTenantHostDenied, Principal: who.Label(), Tenant: who.Tenant, Source: "engine", Request: request,
		Reason: where + "; " + why,
	})
	return false, refused("%s; %s. %s, or the owner sets exec.tenantHostPolicy=allow (senclaw settings set exec.tenantHostPolicy=allow)", where, why, toSandbox(path))
}

// hostOutcome is what the tenant host policy pol makes of a host exec of
// a principal other than the owner (of tenant, "" for none), confinable
// saying whether Landlock can confine it: deny refuses it; allow and
// warn run it confined where Landlock can, and unconfined where it
// cannot, but a tenant's under warn, which is refused. Any other policy
// refuses, as deny does.
func hostOutcome(pol string, confinable bool, tenant string) string {
	switch {
	case pol != HostPolicyAllow && pol != HostPolicyWarn:
		return hostRunRefused
	case confinable:
		return hostRunConfined
	case pol == HostPolicyWarn && tenant != "":
		return hostRunRefused
	}
	return hostRunUnconfined
}

// hostWarnEvery spaces out the warnings of one principal's host exec on
// one path: an agent whose shell runs on the host runs many commands,
// and one event says it as well as a flood that pushes the refusals out
// of the bounded store.
const hostWarnEvery = 10 * time.Minute

// firstHostWarning reports whether key's warning is due, and marks it.
func (e *Engine) firstHostWarning(key string) bool {
	e.hostWarnMu.Lock()
	defer e.hostWarnMu.Unlock()
	now := e.now()
	if last, ok := e.hostWarned[key]; ok && now.Sub(last) < hostWarnEvery {
		return false
	}
	if e.hostWarned == nil {
		e.hostWarned = map[string]time.Time{}
	}
	e.hostWarned[key] = now
	return true
}

// toSandbox says, as a sentence's start, what puts path's command in a
// sandbox: the switch turned on, or for the direct backend, an
// isolating one (no switch sends a run there).
func toSandbox(path string) string {
	switch path {
	case pathScheduler:
		return "Switch it on (senclaw policy --scheduler on) and the command runs in a sandbox"
	case pathDirect:
		return "Use an isolating backend instead (a sandbox on bwrap, landlock or docker, or with no backend named, for the best one here) and the command runs in a sandbox"
	}
	return "Switch it on (senclaw policy --agent-shell on) and the command runs in a sandbox"
}

// The host paths the tenant host policy governs, as refusals name them.
const (
	pathAgentShell = "the Agent shell switch is off"
	pathScheduler  = "the Scheduler scripts switch is off"
	pathDirect     = "the sandbox's backend is direct"
)

// hostExecFor applies the tenant host policy to p, which a switch or the
// direct backend sends to the host, for its principal; the gate calls
// it. It marks p to run confined, or refuses what the policy or the
// tenant directory check (hostconfine.go) does not let run. A policy
// check (dry run) records only a refusal.
func (e *Engine) hostExecFor(ctx context.Context, p *plan) error {
	path := pathAgentShell
	switch {
	case !p.offPath:
		path = pathDirect
	case p.req.Source == SourceScheduler:
		path = pathScheduler
	}
	req := fmt.Sprintf("%s run %s: %s", p.req.Source, p.runID, p.display)
	who := p.principal(ctx)
	confined, err := e.hostExec(ctx, who, path, req, !p.dryRun)
	if err != nil {
		return err
	}
	p.hostConfined = confined
	if !confined && !who.IsOwner() {
		return e.refuseTenantDirs(ctx, p, who, path)
	}
	return nil
}
