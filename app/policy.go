package app

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// SetPolicy validates and saves the exec policy. On any error nothing
// changes.
func (e *Engine) SetPolicy(p ExecPolicy) (ExecPolicy, error) {
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
	return p, nil
}

// SetSettings validates and saves the settings. The same limit checks as
// for sandboxes apply; the allowlist keeps absolute paths, canonical and
// deduplicated, and refuses private folders.
func (e *Engine) SetSettings(s Settings) (Settings, error) {
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
	} {
		if err != nil {
			return Settings{}, err
		}
	}
	if s.SandboxUID == 0 || s.SandboxGID == 0 {
		return Settings{}, badField("sandboxUid", s.SandboxUID, "sandboxed code must never run as root: give an unprivileged uid and gid (65534 is nobody)")
	}
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
		for _, p := range e.paths.protected() {
			if within(real, p) || within(p, real) {
				return Settings{}, badField(field, path, "is or contains %s, which is private and never given to a sandbox", p)
			}
		}
		if !slices.Contains(list, real) {
			list = append(list, real)
		}
	}
	if list == nil {
		list = []string{}
	}
	s.Allowlist = list
	s.DefaultImage = strings.TrimSpace(s.DefaultImage)
	if err := e.store.PutSetting("app", s); err != nil {
		return Settings{}, fmt.Errorf("saving settings: %w", err)
	}
	e.mu.Lock()
	e.settings = s
	e.mu.Unlock()
	return s, nil
}

// AgentShellRequest is one command of an agent's shell tool.
type AgentShellRequest struct {
	// ProjectDir is the chat's working directory: the only place the
	// command may write.
	ProjectDir string            `json:"projectDir"`
	Command    string            `json:"command"`
	TimeoutMs  int               `json:"timeoutMs,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
}

// AgentShell runs an agent's shell command under the exec policy: with the
// Agent shell switch off it runs directly on the host (recorded as "none");
// on, it runs in the project's sandbox, which may write only the project
// dir and its own /tmp, reads per the Disk read mode, and gets the network
// and loopback ports of the policy. With the switch on and no isolation
// available, it is refused.
func (e *Engine) AgentShell(ctx context.Context, req AgentShellRequest) (*RunResult, error) {
	pol := e.Policy()
	dir, err := checkHostDir("projectDir", req.ProjectDir, e.paths)
	if err != nil {
		return nil, err
	}
	sb, err := e.agentSandbox(dir, pol)
	if err != nil {
		return nil, err
	}
	p, err := e.planFor(sb, RunRequest{Source: SourceAgentShell, Command: req.Command, Env: req.Env, TimeoutMs: req.TimeoutMs})
	if err != nil {
		return nil, err
	}
	p.offPath = !pol.ExecShell
	return e.run(ctx, p)
}

// agentSandbox finds the agent sandbox of dir, or creates it, and applies
// the policy's disk read mode, network and loopback before each run.
func (e *Engine) agentSandbox(dir string, pol ExecPolicy) (*Sandbox, error) {
	all, err := e.List()
	if err != nil {
		return nil, err
	}
	var sb *Sandbox
	for i := range all {
		if all[i].Kind == "agent" && all[i].Workspace == dir {
			sb = &all[i]
			break
		}
	}
	if sb == nil {
		e.createMu.Lock()
		defer e.createMu.Unlock()
		if err := e.roomForSandbox(); err != nil {
			return nil, err
		}
		def := e.defaultSandbox()
		def.ID = randomHex(6)
		def.Name = "agent:" + filepath.Base(dir)
		def.Kind = "agent"
		def.Workspace = dir
		def.CPUs, def.MemoryMB, def.Pids, def.TimeoutMs = 4, 4096, 256, 180000
		def.DiskMB = 0 // a project dir has no quota; the record says so
		sb = &def
	}
	sb.FsMode = pol.ExecFsMode
	sb.Network = pol.ExecNetwork
	sb.Ports = backends.PortRules{Listen: []int{}, Connect: []int{}, Loopback: pol.ExecLoopback}
	sb.UpdatedAt = e.now().UTC()
	if err := e.store.PutSandbox(sb.ID, sb); err != nil {
		return nil, fmt.Errorf("saving the agent sandbox: %w", err)
	}
	return sb, nil
}

// SchedulerDeadline bounds a scheduler script.
const SchedulerDeadline = 600 * time.Second

// SchedulerScript runs a scheduled bash script: directly with the
// Scheduler scripts switch off (recorded as "none"), else in a one-shot
// sandbox with the policy's scheduler network.
func (e *Engine) SchedulerScript(ctx context.Context, script string) (*RunResult, error) {
	pol := e.Policy()
	timeout := int(SchedulerDeadline / time.Millisecond)
	req := RunRequest{Source: SourceScheduler, Language: "bash", Code: script, TimeoutMs: timeout}
	if pol.SchedulerScript {
		network := pol.SchedulerNetwork
		name := "scheduler"
		return e.RunOnce(ctx, SandboxConfig{Name: &name, Network: &network, TimeoutMs: &timeout}, req)
	}
	sb, err := e.newSandbox(SandboxConfig{TimeoutMs: &timeout})
	if err != nil {
		return nil, err
	}
	sb.Kind, sb.Name = "oneshot", "scheduler (direct)"
	if err := e.makeWorkspace(&sb); err != nil {
		return nil, err
	}
	defer e.purgeWorkspace(&sb)
	p, err := e.planFor(&sb, req)
	if err != nil {
		return nil, err
	}
	p.kind, p.offPath = "oneshot", true
	return e.run(ctx, p)
}
