package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/senclaw/sandbox/app/guard"
	"github.com/senclaw/sandbox/app/hostsecrets"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/secevents"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/landlock"
)

// Host exec confined per run (GoClaw's tenant host policy on Landlock):
// a command that a documented off path, or a sandbox on the direct
// backend, sends to this machine for any principal but the owner runs
// through the Landlock helper, as the engine's own user (a root engine's
// with every capability dropped; on a root engine a direct sandbox's
// runs keep its own uid), with a domain of its own: its project
// directory (the run's workspace) and its tenant's directory to write,
// the system roots to read, /proc only as Landlock lets a domain see it
// (another domain's processes, the engine's among them, are out of
// ptrace's reach: no environ, no mem, no fd), signals and abstract Unix
// sockets scoped (ABI 6), the network as the run's sandbox would have
// it, through the engine's proxy. Nothing else: other tenants'
// directories, the engine's data and config, the owner's home stay out
// of reach whatever the command does, which the shell guard next to it
// only reads.

// isolationHostExec is the isolation label of a confined host exec.
const isolationHostExec = "landlock (host exec)"

// hostScopeABI is the oldest Landlock ABI host exec is confined with: a
// host exec runs as the engine's user, which an unscoped run could
// signal (ABI 6 scopes signals and abstract Unix sockets).
const hostScopeABI = 6

// EventFsConfinementUnavailable is recorded once per engine start when a
// host exec of a principal other than the owner finds no Landlock to
// confine it with.
const EventFsConfinementUnavailable = "security.exec_fs_confinement_unavailable"

// hostConfinementState says whether host exec can be confined here, and
// why not.
type hostConfinementState struct {
	ok  bool
	why string
}

// hostConfinement probes for the Landlock a confined host exec needs;
// with record, the first time it is missing is a security event.
func (e *Engine) hostConfinement(ctx context.Context, record bool) hostConfinementState {
	st := e.probeHostConfinement(ctx)
	if st.ok || !record {
		return st
	}
	e.hostWarnMu.Lock()
	said := e.hostUnconfinedSaid
	e.hostUnconfinedSaid = true
	e.hostWarnMu.Unlock()
	if !said {
		e.log.Warn("Host exec cannot be confined: Landlock is not available.", "reason", st.why)
		e.security.Record(secevents.Event{
			Kind: EventFsConfinementUnavailable, Source: "engine",
			Request: "host exec of principals other than the owner (the Agent shell or Scheduler scripts switch off, the direct backend)",
			Reason:  "Landlock is not available for host exec (" + st.why + "): under exec.tenantHostPolicy warn an agent's host command runs unconfined and a tenant's is refused; under allow a command naming a tenant's directory is refused. Recorded once per engine start.",
		})
	}
	return st
}

func (e *Engine) probeHostConfinement(ctx context.Context) hostConfinementState {
	b := e.probes.find(landlock.Name)
	if b == nil {
		return hostConfinementState{why: "the landlock backend is not offered by this engine (SENCLAW_BACKENDS)"}
	}
	if c := e.probes.probe(ctx, b, false); !c.Usable() {
		return hostConfinementState{why: c.Reason}
	}
	abi, err := landlock.ABIVersion()
	if err != nil {
		return hostConfinementState{why: err.Error()}
	}
	if abi < hostScopeABI {
		return hostConfinementState{why: fmt.Sprintf("the kernel offers Landlock ABI %d, and a host exec, which runs as the engine's user, needs ABI %d (Linux 6.12) to keep its signals from the engine's processes", abi, hostScopeABI)}
	}
	return hostConfinementState{ok: true}
}

// confineHostSpec turns the spec of a confined host exec into its
// Landlock domain: strict (the system roots to read), the workspace and
// the tenant's directory to write, nothing the sandbox's fs mode or
// allowlist would add.
func (e *Engine) confineHostSpec(p *plan, spec *backends.Spec) {
	spec.HostExec, spec.FsMode = true, backends.FsStrict
	spec.ReadPaths, spec.Hidden = nil, nil
	if t := p.sb.Tenant; t != "" {
		spec.WritePaths = []string{canonical(e.TenantDir(t))}
	}
	spec.Masked = append(spec.Masked, e.hostSecretList()...)
}

// hostSecretsRoot is the system root that holds the host's own secrets
// (shadow, private keys, services' credentials). A host exec runs as the
// engine's user, uid 0 with no capability for a root engine, which the
// file modes still let read root's own files (/etc/shadow,
// /etc/ssl/private) and its groups' (ssl-cert); Landlock, which reads
// the system roots, keeps what others may not read out as masked paths,
// listed by app/hostsecrets (walked again when /etc changed).
const hostSecretsRoot = "/etc"

// hostSecretList is what under hostSecretsRoot others may not read now.
func (e *Engine) hostSecretList() []string {
	e.hostSecretsOnce.Do(func() { e.hostSecrets = hostsecrets.New(hostSecretsRoot) })
	if e.hostSecrets == nil { // the engine is closed
		w := hostsecrets.New(hostSecretsRoot)
		defer w.Close()
		return w.List()
	}
	return e.hostSecrets.List()
}

// refuseTenantDirs refuses an unconfined host exec of who (Landlock is
// not there) whose command names a tenant's directory, its own
// included: with nothing around it, the command would reach every
// tenant's files as the engine's user. The shell guard's path check
// reads the command.
func (e *Engine) refuseTenantDirs(ctx context.Context, p *plan, who principal.Principal, path string) error {
	if e.opts.DataDir == "" {
		return nil
	}
	in := e.guardInput(p, e.Settings().Guard)
	in.Protected, in.Allowed = []string{canonical(filepath.Join(e.opts.DataDir, "tenants"))}, nil
	in.PathWordsOnly = true
	in.Off = nil
	for _, g := range guard.Groups() {
		if g.Group != guard.ProtectedPaths {
			in.Off = append(in.Off, g.Group)
		}
	}
	res := guardPlan(p, in)
	if !res.Denied() {
		return nil
	}
	f := res.First()
	reason := fmt.Sprintf("%s and Landlock is not available to confine host exec, so this command of %s would run on this machine with no sandbox; it names a tenant's directory (%s), which an unconfined command is never let near", path, who, f.Part)
	e.security.Record(secevents.Event{
		Kind: EventTenantHostDenied, Principal: who.Label(), Tenant: who.Tenant, Source: "engine",
		Request: fmt.Sprintf("%s run %s: %s", p.req.Source, p.runID, p.display), Reason: reason,
	})
	return refused("%s. %s, or run it where Landlock (ABI %d, Linux 6.12) is available", reason, toSandbox(path), hostScopeABI)
}
