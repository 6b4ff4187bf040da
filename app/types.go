package app

import (
	"github.com/senclaw/sandbox/app/guard"
	"github.com/senclaw/sandbox/backends"
)

// KindApp is the kind of a Space App's sandbox (app/spaceapps).
const KindApp = "app"

// Sandbox states.
const (
	StateIdle    = "idle"
	StateRunning = "running"
	StateError   = "error"
	// StateUnreachable: its engine on another machine does not answer
	// (engines.go); the sandbox is kept.
	StateUnreachable = "unreachable"
)

// limitsOf is a sandbox's resource limits, as its backend takes them.
func limitsOf(s *Sandbox) backends.Limits {
	return backends.Limits{CPUs: s.CPUs, MemoryMB: s.MemoryMB, Pids: s.Pids, DiskMB: s.DiskMB}
}

// MaxDockerPool bounds the dockerPoolSize setting.
const MaxDockerPool = 16

// DefaultSettings are used until settings are saved.
func DefaultSettings() Settings {
	s := Settings{
		DefaultFsMode:         backends.FsStrict,
		Allowlist:             []string{},
		MountAllow:            []string{},
		AllowedSockets:        []string{},
		PinnedCAs:             map[string]string{},
		Engines:               []EngineSettings{},
		DefaultCPUs:           1,
		DefaultMemoryMB:       512,
		DefaultPids:           256,
		DefaultTimeoutMs:      60000,
		DefaultDiskMB:         2048,
		SandboxUIDRange:       "auto",
		SandboxUID:            65534,
		SandboxGID:            65534,
		DefaultImage:          "debian:bookworm-slim",
		Notifications:         true,
		McpSessionIdleMinutes: 30,
		McpMaxSessions:        16,
		ReadyIdleMinutes:      5,
		DockerPoolSize:        2,
	}
	s.MaxSandboxes, s.MaxRunsPerSandbox = 500, 32
	s.Concurrency, s.QueueLength, s.MaxBackgroundRuns = defaultConcurrency(), DefaultQueueLength, defaultMaxBackgroundRuns()
	s.MinFreeDiskMB = DefaultMinFreeDiskMB
	s.NestedProjectDepth, s.NestedProjectLimit = DefaultNestedProjectDepth, DefaultNestedProjectLimit
	s.Guard = DefaultGuardSettings()
	s.Exec = ExecSettings{TenantHostPolicy: HostPolicyWarn, HostTimeoutSeconds: DefaultHostTimeoutSeconds, CredentialedCommands: []string{}}
	return s
}

// DefaultGuardSettings: every group on; a match in a sandbox warns.
func DefaultGuardSettings() GuardSettings {
	return GuardSettings{PipeToInterpreter: true, ForkBomb: true, ReverseShell: true, DecodeAndRun: true,
		EnvDump: true, ProtectedPaths: true, Unreadable: true, Sandbox: string(guard.DefaultSandboxMode)}
}

// DefaultExecPolicy is the policy until one is saved.
func DefaultExecPolicy() ExecPolicy {
	return ExecPolicy{
		ExecNetwork:      true,
		ExecFsMode:       backends.FsOpen,
		ExecLoopback:     []int{},
		RunPython:        true,
		RunNode:          true,
		SchedulerNetwork: true,
	}
}

// runSources are the sources a run may name; a record shows its own.
var runSources = []string{SourceMCP, SourceREST, SourceCLI, SourceAgentShell, SourceScheduler, SourceCode, SourceSpaceApp}

// placeOf is the id the run's cgroups and processes are known by to its
// backend: AheadID when the run took a sandbox made ahead.
func placeOf(r *RunRecord) string {
	if r.AheadID != "" {
		return r.AheadID
	}
	return r.ID
}
