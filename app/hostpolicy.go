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
// take a documented off path, the Agent shell or Scheduler scripts
// switch off, where a command runs on this machine as the engine's user
// with nothing in the way. The owner always may: the switch is its to
// turn. For every other principal: deny refuses; warn runs an agent's
// (or app's) command, the owner's own local agents' included, and records
// security.exec_tenant_host_would_deny (at most every hostWarnEvery),
// and refuses a tenant's, which on the host would reach every other
// tenant's directory and the owner's files; allow runs it.
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
	return badField(field, v, "must be deny (host exec only for the owner), warn (an agent's runs with a security event, a tenant's is refused) or allow")
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
// (named by path) sends to the host: nil, it runs (under warn, recorded
// as a security event when record is set); else the refusal, recorded.
func (e *Engine) hostExec(who principal.Principal, path, request string, record bool) error {
	if who.IsOwner() {
		return nil
	}
	pol := e.tenantHostPolicy()
	if pol == HostPolicyAllow {
		return nil
	}
	where := fmt.Sprintf("%s, so this command would run directly on this machine with no sandbox, as the engine's user", path)
	if pol == HostPolicyWarn && who.Tenant == "" {
		if record && e.firstHostWarning(who.Label()+" "+path) {
			e.security.Record(secevents.Event{
				Kind: EventTenantHostWouldDeny, Principal: who.Label(), Source: "engine", Request: request,
				Reason: fmt.Sprintf("%s; exec.tenantHostPolicy is warn, so it runs; deny would refuse it", where),
			})
		}
		return nil
	}
	why := fmt.Sprintf("exec.tenantHostPolicy is deny, which keeps host exec for the owner, and this is %s", who)
	if pol == HostPolicyWarn {
		why = fmt.Sprintf("this is %s, and under exec.tenantHostPolicy warn a tenant's commands still never run unconfined on the host, where they would reach every other tenant's directory", who)
	}
	e.security.Record(secevents.Event{
		Kind: EventTenantHostDenied, Principal: who.Label(), Tenant: who.Tenant, Source: "engine", Request: request,
		Reason: where + "; " + why,
	})
	return refused("%s; %s. Switch it on (%s) and the command runs in a sandbox, or the owner sets exec.tenantHostPolicy=allow (senclaw settings set exec.tenantHostPolicy=allow)", where, why, switchOn(path))
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

// switchOn is the command that turns path's switch on.
func switchOn(path string) string {
	if path == pathScheduler {
		return "senclaw policy --scheduler on"
	}
	return "senclaw policy --agent-shell on"
}

// The off paths the tenant host policy governs, as refusals name them.
const (
	pathAgentShell = "the Agent shell switch is off"
	pathScheduler  = "the Scheduler scripts switch is off"
)

// hostExecFor applies the tenant host policy to p, which a switch sends
// to the host, for its principal; the gate calls it.
func (e *Engine) hostExecFor(ctx context.Context, p *plan) error {
	path := pathAgentShell
	if p.req.Source == SourceScheduler {
		path = pathScheduler
	}
	req := fmt.Sprintf("%s run %s: %s", p.req.Source, p.runID, p.display)
	return e.hostExec(p.principal(ctx), path, req, true)
}
