package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sync"

	"github.com/senclaw/sandbox/app/policyfile"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/safetext"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// SetPolicy validates and saves the exec policy, and writes it into the
// owner's policy file. On any error nothing changes.
func (e *Engine) SetPolicy(p ExecPolicy) (ExecPolicy, error) {
	if err := e.ownerFileWritable(); err != nil {
		return ExecPolicy{}, err
	}
	return e.setPolicy(p, true)
}

// ownerFileWritable refuses a change of the settings or the exec policy
// while the owner's file is broken: writing them over it would drop the
// hand edit, and the keys only the file holds, without a word.
func (e *Engine) ownerFileWritable() error {
	if _, err := e.ownerPolicyFresh(); err != nil {
		var pe *policyfile.Error
		if errors.As(err, &pe) {
			return &ConflictError{Reason: pe.Error() + " (nothing was changed; fix or remove the file, then change it again)"}
		}
		return err
	}
	return nil
}

// setPolicy is SetPolicy; with writeFile false it leaves the owner's
// policy file to its caller (which is reading it).
func (e *Engine) setPolicy(p ExecPolicy, writeFile bool) (ExecPolicy, error) {
	if p.ExecFsMode == "" {
		p.ExecFsMode = backends.FsOpen
	}
	if _, err := checkFsMode("execFsMode", string(p.ExecFsMode)); err != nil {
		return ExecPolicy{}, err
	}
	loop, err := checkPorts("execLoopback", p.ExecLoopback, 1)
	if err != nil {
		return ExecPolicy{}, err
	}
	for _, q := range loop {
		if e.protectedPort(q) || netfwd.Reserved(q) {
			return ExecPolicy{}, badField("execLoopback", q, "is the engine's own API port or a port of the in-sandbox proxy forwarder, which no sandbox may call on this machine")
		}
	}
	p.ExecLoopback = loop
	if err := e.store.PutSetting("exec_policy", p); err != nil {
		return ExecPolicy{}, fmt.Errorf("saving the exec policy: %w", err)
	}
	e.mu.Lock()
	e.policy = p
	e.mu.Unlock()
	e.log.Info("Exec policy changed.", "execShell", p.ExecShell, "runPython", p.RunPython, "runNode", p.RunNode, "schedulerScript", p.SchedulerScript)
	e.aheadChanged()
	if writeFile {
		e.saveOwnerPolicy()
	}
	return p, nil
}

// SetSettings validates and saves the settings, and writes them into
// the owner's policy file. The same limit checks as for sandboxes apply;
// the allowlist keeps absolute paths, canonical and deduplicated, and
// refuses private folders.
func (e *Engine) SetSettings(s Settings) (Settings, error) {
	if err := e.ownerFileWritable(); err != nil {
		return Settings{}, err
	}
	return e.setSettings(s, true)
}

// setSettings is SetSettings; with writeFile false it leaves the owner's
// policy file to its caller (which is reading it).
func (e *Engine) setSettings(s Settings, writeFile bool) (Settings, error) {
	if _, err := checkFsMode("defaultFsMode", string(s.DefaultFsMode)); err != nil {
		return Settings{}, err
	}
	for _, err := range []error{
		checkCPUs("defaultCpus", s.DefaultCPUs),
		checkMemory("defaultMemoryMb", s.DefaultMemoryMB),
		checkPids("defaultPids", s.DefaultPids),
		checkTimeout("defaultTimeoutMs", s.DefaultTimeoutMs),
		checkDisk("defaultDiskMb", s.DefaultDiskMB),
		checkBounds(s),
		checkRange("minFreeDiskMb", s.MinFreeDiskMB, 0, MaxMinFreeDiskMB, " MiB (0: never refuse)"),
		checkRange("nestedProjectDepth", s.NestedProjectDepth, 0, MaxNestedProjectDepth, " levels (0: the folder alone)"),
		checkRange("nestedProjectLimit", s.NestedProjectLimit, 1, MaxNestedProjectLimit, " projects"),
	} {
		if err != nil {
			return Settings{}, err
		}
	}
	if s.McpSessionIdleMinutes < 1 || s.McpSessionIdleMinutes > 1440 {
		return Settings{}, badField("mcpSessionIdleMinutes", s.McpSessionIdleMinutes, "must be from 1 to 1440 minutes (a day)")
	}
	if err := checkRange("readyIdleMinutes", s.ReadyIdleMinutes, 0, 1440, " minutes (0: no sandbox is kept ready)"); err != nil {
		return Settings{}, err
	}
	if s.McpMaxSessions < 1 || s.McpMaxSessions > 1000 {
		return Settings{}, badField("mcpMaxSessions", s.McpMaxSessions, "must be from 1 to 1000 sessions per token")
	}
	if err := checkLANListen(s.LANListen); err != nil {
		return Settings{}, err
	}
	if s.DockerPoolSize < 0 || s.DockerPoolSize > MaxDockerPool {
		return Settings{}, badField("dockerPoolSize", s.DockerPoolSize, "must be from 0 (no containers kept ready) to %d idle containers per one-shot configuration", MaxDockerPool)
	}
	if s.SandboxUID == 0 || s.SandboxGID == 0 {
		return Settings{}, badField("sandboxUid", s.SandboxUID, "is deprecated (each sandbox runs as a uid of its own, from sandboxUidRange) and names who owned the workspaces before; it is never root: leave it as it is")
	}
	if err := e.checkUIDRange(&s); err != nil {
		return Settings{}, err
	}
	for i, path := range s.Allowlist {
		if err := checkText(fmt.Sprintf("allowlist[%d]", i), path); err != nil {
			return Settings{}, err
		}
	}
	for i, path := range s.MountAllow {
		if err := checkText(fmt.Sprintf("mountAllow[%d]", i), path); err != nil {
			return Settings{}, err
		}
	}
	allow, err := e.checkMountAllow(s.MountAllow)
	if err != nil {
		return Settings{}, err
	}
	s.MountAllow = allow
	// The allowlist is a read-only view: the mount guard for a read-only
	// mount applies, under the mountAllow being saved.
	g := hostDirGuard{paths: e.paths, allow: allow}
	var list []string
	for i, path := range s.Allowlist {
		field := fmt.Sprintf("allowlist[%d]", i)
		if !filepath.IsAbs(path) {
			return Settings{}, badField(field, path, "must be an absolute path")
		}
		real := canonical(path)
		if real == "/" {
			return Settings{}, badField(field, path, "is the whole disk; use the open fs mode instead")
		}
		if why, _ := g.why(real, false); why != "" {
			return Settings{}, badField(field, path, "%s", why)
		}
		if !slices.Contains(list, real) {
			list = append(list, real)
		}
	}
	if list == nil {
		list = []string{}
	}
	s.Allowlist = list
	socks, err := e.checkAllowedSockets(s.AllowedSockets)
	if err != nil {
		return Settings{}, err
	}
	s.AllowedSockets = socks
	if s.PinnedCAs, err = checkPinnedCAs(s.PinnedCAs); err != nil {
		return Settings{}, err
	}
	if s.DefaultImage, err = checkImage("defaultImage", s.DefaultImage); err != nil {
		return Settings{}, err
	}
	if s.Engines, err = e.checkEngines(s.Engines); err != nil {
		return Settings{}, err
	}
	if err := checkGuardSettings(s.Guard); err != nil {
		return Settings{}, err
	}
	s.Exec.EnvOverride = "" // the environment's, never stored
	if s.Exec.TenantHostPolicy == "" {
		s.Exec.TenantHostPolicy = HostPolicyWarn
	}
	if err := CheckTenantHostPolicy("exec.tenantHostPolicy", s.Exec.TenantHostPolicy); err != nil {
		return Settings{}, err
	}
	if s.Exec.HostTimeoutSeconds == 0 {
		s.Exec.HostTimeoutSeconds = DefaultHostTimeoutSeconds
	}
	if err := checkRange("exec.hostTimeoutSeconds", s.Exec.HostTimeoutSeconds, 1, MaxHostTimeoutSeconds, " s (1 s to 24 h)"); err != nil {
		return Settings{}, err
	}
	if s.Exec.CredentialedCommands, err = checkCredentialedCommands(s.Exec.CredentialedCommands); err != nil {
		return Settings{}, err
	}
	if err := e.store.PutSetting("app", s); err != nil {
		return Settings{}, fmt.Errorf("saving settings: %w", err)
	}
	e.mu.Lock()
	e.settings = s
	e.mu.Unlock()
	e.applyPoolSize(s.DockerPoolSize)
	e.applyEngines(s.Engines)
	// The sandboxes made ahead go first: a run that a raised concurrency
	// lets in finds those it took made under the old settings.
	e.aheadChanged()
	e.settingsChanged() // a raised concurrency lets waiting runs in
	if writeFile {
		e.saveOwnerPolicy()
	}
	return s, nil
}

// applyPoolSize gives the backends that keep containers ready for
// one-shot runs the dockerPoolSize setting.
func (e *Engine) applyPoolSize(n int) {
	for _, b := range e.opts.Backends {
		if p, ok := b.(backends.PoolSizer); ok {
			p.SetPoolSize(n)
		}
	}
}

// checkMountAllow validates the mountAllow setting: absolute folders,
// canonical and deduplicated; never the whole disk or what the guard
// refuses whatever the settings say (hostDirGuard.private).
func (e *Engine) checkMountAllow(paths []string) ([]string, error) {
	g := hostDirGuard{paths: e.paths}
	out := []string{}
	for i, path := range paths {
		field := fmt.Sprintf("mountAllow[%d]", i)
		if !filepath.IsAbs(path) {
			return nil, badField(field, path, "must be an absolute path")
		}
		real := canonical(path)
		if real == "/" || slices.Contains(systemRoots, real) {
			return nil, badField(field, path, "is the whole disk or a system root; name the folder you mean (for example /srv/www), not a whole tree")
		}
		if why := g.private(real, e.paths.homes.view()); why != "" {
			return nil, badField(field, path, "%s; the mountAllow setting cannot change that", why)
		}
		if !slices.Contains(out, real) {
			out = append(out, real)
		}
	}
	return out, nil
}

// AgentShellRequest is one command of an agent's shell tool.
type AgentShellRequest struct {
	// ProjectDir is the chat's working directory: the only place the
	// command may write.
	ProjectDir string `json:"projectDir"`
	// Command is a shell command line (run with /bin/sh -c); Argv an
	// exact argument vector. Exactly one is given.
	Command   string            `json:"command,omitempty"`
	Argv      []string          `json:"argv,omitempty"`
	TimeoutMs int               `json:"timeoutMs,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	// HostEnv is the caller's own environment. It is used only on the
	// documented off path, where the command runs on the host as the
	// caller would have run it (PATH, HOME and the rest as they were);
	// a sandboxed command never sees it. Names that are not plain
	// variable names (exported shell functions) are left out.
	HostEnv map[string]string `json:"hostEnv,omitempty"`
	// Dir, when set, is where in the project the command starts (the
	// caller's working directory): ProjectDir itself or a folder inside it.
	Dir string `json:"dir,omitempty"`
	// Agent names the agent asking (claude-code, gemini-cli, shell), for
	// the record: lowercase letters, digits and dashes, at most 32.
	Agent string `json:"agent,omitempty"`
	// Attach keeps the caller connected: stdin, terminal, signals.
	Attach *Attachment `json:"-"`
	// Stdout and Stderr, when set, also receive the output as it comes.
	Stdout io.Writer `json:"-"`
	Stderr io.Writer `json:"-"`
}

var agentNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`) })

// AgentShell runs an agent's shell command under the exec policy: with the
// Agent shell switch off it runs directly on the host (recorded as "none");
// on, it runs in the project's sandbox, which may write only the project
// dir and its own /tmp, reads per the Disk read mode, and gets the network
// and loopback ports of the policy. With the switch on and no isolation
// available, it is refused. Whether a principal other than the owner
// may take the off path is the tenant host policy's (hostpolicy.go).
func (e *Engine) AgentShell(ctx context.Context, req AgentShellRequest) (*RunResult, error) {
	// The owner's hand edit of its policy file holds from this run on
	// (the Agent shell switch is in it).
	if _, err := e.ownerPolicyFresh(); err != nil {
		return nil, asRefusal(err)
	}
	pol := e.Policy()
	if req.Agent != "" && !agentNameRE().MatchString(req.Agent) {
		return nil, badField("agent", req.Agent, "names an agent in lowercase letters, digits and dashes (claude-code, gemini-cli, shell), at most 32")
	}
	// The agent's shell writes its project dir: the guard for a
	// read-write mount applies (and a tenant's lies in its directory).
	tenant := principal.Of(ctx).Tenant
	dir, err := e.checkTenantDir("projectDir", req.ProjectDir, tenant, true)
	if err != nil {
		return nil, err
	}
	start, err := startDir(dir, req.Dir)
	if err != nil {
		return nil, err
	}
	sb, err := e.agentSandbox(dir, tenant, pol)
	if err != nil {
		return nil, err
	}
	offPath := !pol.ExecShell
	env := req.Env
	if offPath && len(req.HostEnv) > 0 {
		env = hostEnv(req.HostEnv, req.Env)
	}
	var policyNotes []string
	var policyErr error
	if !offPath {
		// The project's policy file bounds its sandbox, for this run.
		bounded := *sb
		env = maps.Clone(env)
		if policyNotes, policyErr = e.applyProjectPolicy(&bounded, env, true, SandboxConfig{}); policyErr == nil {
			sb = &bounded
		}
	}
	p, err := e.planFor(sb, RunRequest{Source: SourceAgentShell, Command: req.Command, Argv: req.Argv, Env: env, TimeoutMs: req.TimeoutMs, Attach: req.Attach, Agent: req.Agent, Stdout: req.Stdout, Stderr: req.Stderr})
	if err != nil {
		return nil, err
	}
	p.policyNotes = policyNotes
	if !offPath {
		p.project = sb.Workspace
	}
	if policyErr != nil {
		p.refusal = asRefusal(policyErr)
	}
	p.offPath = offPath
	p.cwd = dir
	if offPath {
		e.boundHostRun(ctx, p)
	}
	if start != "" {
		p.cwd = start
		// sh changes into the folder, then execs the command as given.
		p.argv = append([]string{"/bin/sh", "-c", `cd -- "$0" && exec "$@"`, start}, p.argv...)
	}
	return e.run(ctx, p)
}

// startDir checks that dir (the caller's working directory) is the
// canonical project or inside it, and returns it canonical; "" for the
// project itself.
func startDir(project, dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	if !filepath.IsAbs(dir) {
		return "", badField("dir", dir, "must be an absolute path")
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", badField("dir", dir, "does not exist")
	}
	if !within(real, project) {
		return "", badField("dir", dir, "is outside the project %s: the agent shell starts commands in the project or a folder inside it; cd into it, or give that folder as the project", project)
	}
	if real == project {
		return "", nil
	}
	return real, nil
}

// AgentShellCheck says what the agent shell would do for a command in
// projectDir now, without running anything: "none" when the switch is
// off (it runs on the host), the isolation it would get when on, or the
// refusal (a bad project dir, nothing that can isolate, the tenant host
// policy's refusal with the switch off). Agent hooks ask
// it before they hand a command to the agent shell, so that a refusal
// reaches the agent as a denial rather than as a failed command.
func (e *Engine) AgentShellCheck(ctx context.Context, projectDir string) (string, error) {
	if _, err := e.ownerPolicyFresh(); err != nil {
		return "", asRefusal(err)
	}
	pol := e.Policy()
	tenant := principal.Of(ctx).Tenant
	dir, err := e.checkTenantDir("projectDir", projectDir, tenant, true)
	if err != nil {
		return "", err
	}
	if !pol.ExecShell {
		// The run records the warning; a refusal is one here too.
		confined, err := e.hostExec(ctx, principal.Of(ctx), pathAgentShell, "agent shell check in "+dir, false)
		if err != nil {
			return "", err
		}
		if confined {
			return isolationHostExec, nil
		}
		return isolationNone, nil
	}
	sb, err := e.agentSandboxView(dir, tenant, pol)
	if err != nil {
		return "", err
	}
	_, isolation, err := e.choose(ctx, &plan{sb: &sb, req: RunRequest{Source: SourceAgentShell, Command: "true"}})
	return isolation, err
}

// hostEnv is the caller's environment with env on top, keeping only the
// names a run may be given.
func hostEnv(host, env map[string]string) map[string]string {
	out := make(map[string]string, len(host)+len(env))
	for k, v := range host {
		if checkEnv("hostEnv", map[string]string{k: v}) == nil {
			out[k] = v
		}
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// agentSandbox finds the agent sandbox of dir, or creates it, and applies
// the policy's disk read mode, network and loopback before each run. It
// writes the store only when something changed: the agent shell's
// everyday run costs no disk commit here.
func (e *Engine) agentSandbox(dir, tenant string, pol ExecPolicy) (*Sandbox, error) {
	e.agentMu.Lock()
	defer e.agentMu.Unlock()
	sb, err := e.storedAgentSandbox(dir, tenant)
	if err != nil {
		return nil, err
	}
	if sb != nil && agentSandboxHolds(sb, pol) {
		return sb, nil
	}
	created := sb == nil
	if created {
		e.createMu.Lock()
		defer e.createMu.Unlock()
		if err := e.roomForSandbox(); err != nil {
			return nil, err
		}
		if err := e.roomForTenant(tenant); err != nil {
			return nil, err
		}
		def := e.newAgentSandbox(dir, tenant)
		def.ID = randomHex(6)
		if err := e.takeUID(&def); err != nil {
			return nil, err
		}
		sb = &def
	}
	applyAgentPolicy(sb, pol)
	sb.UpdatedAt = e.now().UTC()
	if err := e.store.PutSandbox(sb.ID, sb); err != nil {
		if created {
			e.releaseUID(sb)
		}
		return nil, fmt.Errorf("saving the agent sandbox: %w", err)
	}
	return sb, nil
}

// agentSandboxView is the sandbox the agent shell would run dir's
// commands in now, under pol: the stored one (its backend, limits and
// mounts) or the one it would make, with the policy's fs mode, network
// and ports. It stores nothing: checks judge what a run would get.
func (e *Engine) agentSandboxView(dir, tenant string, pol ExecPolicy) (Sandbox, error) {
	sb, err := e.storedAgentSandbox(dir, tenant)
	if err != nil {
		return Sandbox{}, err
	}
	if sb == nil {
		def := e.newAgentSandbox(dir, tenant)
		sb = &def
	}
	applyAgentPolicy(sb, pol)
	return *sb, nil
}

// storedAgentSandbox is tenant's agent sandbox of the project dir, nil
// when there is none yet.
func (e *Engine) storedAgentSandbox(dir, tenant string) (*Sandbox, error) {
	var sb *Sandbox
	err := e.store.EachSandbox(func(data []byte) error {
		if sb != nil || !bytes.Contains(data, []byte(`"kind":"agent"`)) {
			return nil
		}
		var s Sandbox
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		if s.Kind == "agent" && s.Workspace == dir && s.Tenant == tenant {
			sb = &s
		}
		return nil
	})
	return sb, err
}

// newAgentSandbox is the agent sandbox made for a project dir, without
// its id and uid.
func (e *Engine) newAgentSandbox(dir, tenant string) Sandbox {
	def := e.defaultSandbox()
	def.Tenant = tenant
	// The project dir is the agent's choice: its name is stored as
	// text anyone may read (checkText's policy).
	def.Name = "agent:" + safetext.Escape(filepath.Base(dir))
	def.Kind = "agent"
	def.Workspace = dir
	def.CPUs, def.MemoryMB, def.Pids, def.TimeoutMs = 4, 4096, 256, 180000
	def.DiskMB = 0 // a project dir has no quota; the record says so
	return def
}

// agentPorts are the port rules of an agent sandbox under pol: this
// machine's ports the policy names, nothing else.
func agentPorts(pol ExecPolicy) backends.PortRules {
	return backends.PortRules{Listen: []int{}, Connect: []int{}, Loopback: pol.ExecLoopback}
}

// agentFsMode is the fs mode of tenant's agent sandbox under pol.
func agentFsMode(tenant string, pol ExecPolicy) backends.FsMode {
	if tenant != "" && pol.ExecFsMode == backends.FsOpen {
		return backends.FsStrict // no tenant reads the whole disk
	}
	return pol.ExecFsMode
}

// agentSandboxHolds reports whether sb already has pol's fs mode,
// network and ports.
func agentSandboxHolds(sb *Sandbox, pol ExecPolicy) bool {
	return sb.FsMode == agentFsMode(sb.Tenant, pol) && sb.Network == pol.ExecNetwork && slices.Equal(sb.Ports.Loopback, pol.ExecLoopback) &&
		len(sb.Ports.Listen) == 0 && len(sb.Ports.Connect) == 0 && len(sb.Ports.Domains) == 0 && len(sb.Ports.DenyDomains) == 0
}

// applyAgentPolicy gives sb pol's fs mode, network and ports.
func applyAgentPolicy(sb *Sandbox, pol ExecPolicy) {
	sb.FsMode = agentFsMode(sb.Tenant, pol)
	sb.Network = pol.ExecNetwork
	sb.Ports = agentPorts(pol)
}
