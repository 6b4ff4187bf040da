package app

import (
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Sandbox is a named, persistent isolation context.
type Sandbox struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Kind is "" for a managed sandbox, "agent" for the agent shell's
	// per-project sandbox, "oneshot" for a throwaway one, "app" for a
	// Space App's (KindApp).
	Kind    string `json:"kind,omitempty"`
	Backend string `json:"backend"`
	Image   string `json:"image,omitempty"`
	// Workspace is the directory the sandbox may write.
	Workspace string `json:"workspace"`
	// OwnWorkspace is true when Workspace is ours (under the data dir's
	// workspaces/), the only case where a purge may remove it.
	OwnWorkspace bool               `json:"ownWorkspace"`
	FsMode       backends.FsMode    `json:"fsMode"`
	Mounts       []backends.Mount   `json:"mounts"`
	Network      bool               `json:"network"`
	Ports        backends.PortRules `json:"ports"`
	CPUs         float64            `json:"cpus"`
	MemoryMB     int                `json:"memoryMb"`
	Pids         int                `json:"pids"`
	DiskMB       int                `json:"diskMb"`
	TimeoutMs    int                `json:"timeoutMs"`
	Env          map[string]string  `json:"env"`
	// TraceEnabled traces the sandbox's runs; TraceAll keeps every read
	// instead of folding the system roots (trace.go, issue #7).
	TraceEnabled bool `json:"traceEnabled"`
	TraceAll     bool `json:"traceAll,omitempty"`
	// APIAccess lets the sandbox reach the engine's own API port through
	// its loopback rules: only a Space App with daemonApi on has it, and
	// its own token there reaches only its own routes. No SandboxConfig
	// field sets it.
	APIAccess bool `json:"apiAccess,omitempty"`
	// State is "idle", "running" or "error"; running is derived from live
	// processes when the sandbox is read.
	State string `json:"state"`
	// Container is what a container backend keeps for the sandbox:
	// running, stopped, none or "needs recreate" (its saved settings no
	// longer match the container). Empty for other backends.
	Container string    `json:"container,omitempty"`
	LastError string    `json:"lastError,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// LastUsedAt is when its last run started; absent until it has run.
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

// KindApp is the kind of a Space App's sandbox (app/spaceapps).
const KindApp = "app"

// Sandbox states.
const (
	StateIdle    = "idle"
	StateRunning = "running"
	StateError   = "error"
)

func (s *Sandbox) limits() backends.Limits {
	return backends.Limits{CPUs: s.CPUs, MemoryMB: s.MemoryMB, Pids: s.Pids, DiskMB: s.DiskMB}
}

// SandboxConfig is what a caller may set on create and update. Nil pointers
// and nil slices mean "not given": the default on create, unchanged on
// update.
type SandboxConfig struct {
	Name     *string          `json:"name,omitempty"`
	Backend  *string          `json:"backend,omitempty"`
	Image    *string          `json:"image,omitempty"`
	FsMode   *string          `json:"fsMode,omitempty"`
	Mounts   []backends.Mount `json:"mounts,omitempty"`
	Network  *bool            `json:"network,omitempty"`
	Listen   []int            `json:"listenPorts,omitempty"`
	Connect  []int            `json:"connectPorts,omitempty"`
	Loopback []int            `json:"loopbackPorts,omitempty"`
	// Domains (allow) and DenyDomains: names the sandbox may / may never
	// reach through the proxy; nil leaves them as they are.
	Domains     []string          `json:"domains,omitempty"`
	DenyDomains []string          `json:"denyDomains,omitempty"`
	CPUs        *float64          `json:"cpus,omitempty"`
	MemoryMB    *int              `json:"memoryMb,omitempty"`
	Pids        *int              `json:"pids,omitempty"`
	DiskMB      *int              `json:"diskMb,omitempty"`
	TimeoutMs   *int              `json:"timeoutMs,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	// ProjectDir, on create only, makes a host folder of the caller's the
	// sandbox's writable workspace (senclaw run --here) instead of a
	// workspace of its own. It is checked as a read-write mount is, never
	// purged, and has no disk quota.
	ProjectDir *string `json:"projectDir,omitempty"`
}

// Settings hold the defaults for new sandboxes and engine-wide choices.
type Settings struct {
	DefaultFsMode    backends.FsMode `json:"defaultFsMode"`
	Allowlist        []string        `json:"allowlist"`
	DefaultNetwork   bool            `json:"defaultNetwork"`
	DefaultCPUs      float64         `json:"defaultCpus"`
	DefaultMemoryMB  int             `json:"defaultMemoryMb"`
	DefaultPids      int             `json:"defaultPids"`
	DefaultTimeoutMs int             `json:"defaultTimeoutMs"`
	// DefaultDiskMB is the workspace quota of new sandboxes.
	DefaultDiskMB int `json:"defaultDiskMb"`
	// AllowedSockets are host Unix sockets every sandbox may connect to
	// by that path, in every fs mode, although they lie outside its own
	// places (the Unix socket guard, backends/unixguard). Only a person
	// may change them.
	AllowedSockets []string `json:"allowedSockets"`
	// SandboxUID and SandboxGID are the unprivileged host user that
	// sandboxed code runs as when the engine itself runs as root.
	SandboxUID uint32 `json:"sandboxUid"`
	SandboxGID uint32 `json:"sandboxGid"`
	// AllowDirect permits runs that explicitly ask for the direct
	// backend (no isolation at all). Off by default: an agent asking for
	// "direct" must not be able to leave the sandbox on its own.
	AllowDirect bool `json:"allowDirect"`
	// LandlockListen permits listen ports in sandboxes of the landlock
	// backend, which has no network namespace: the code binds in this
	// machine's own network, where a bind to 0.0.0.0 is reachable from
	// the LAN. Off by default; such runs are refused with the reason.
	LandlockListen bool `json:"landlockListen"`
	// DefaultImage is the container image for container backends.
	DefaultImage string `json:"defaultImage"`
	// Notifications turns the desktop notifications on or off.
	Notifications bool `json:"notifications"`
	// McpSessionIdleMinutes closes an MCP-over-HTTP session after this
	// many minutes without a request (1 to 1440).
	McpSessionIdleMinutes int `json:"mcpSessionIdleMinutes"`
	// McpMaxSessions is how many MCP-over-HTTP sessions one token may
	// hold at once (1 to 1000); the next is answered 429.
	McpMaxSessions int `json:"mcpMaxSessions"`
	// MountAllow are host folders the owner lets sandboxes mount (and
	// agents use as project dirs, and the allowlist show) although the
	// mount guard refuses them by default: folders in a system tree,
	// read-write (/srv/www), or paths of this machine's services (a
	// Docker data dir). The engine's own dirs, secret folders and other
	// SenClaw engines' dirs are never given, whatever this says. A
	// sandbox that uses it says so in its create and update note.
	MountAllow []string `json:"mountAllow"`
	// MaxSandboxes bounds the sandboxes the engine holds. Concurrency is
	// how many foreground runs execute at once, QueueLength how many more
	// may wait for a place; MaxBackgroundRuns bounds the background runs
	// and Space App servers, which never wait; MaxRunsPerSandbox the runs
	// of one sandbox (waiting and background ones included). Past them,
	// creations and runs are refused (bounds.go).
	MaxSandboxes      int `json:"maxSandboxes"`
	Concurrency       int `json:"concurrency"`
	QueueLength       int `json:"queueLength"`
	MaxBackgroundRuns int `json:"maxBackgroundRuns"`
	MaxRunsPerSandbox int `json:"maxRunsPerSandbox"`
	// DockerPoolSize is how many idle containers the Docker backend keeps
	// ready per one-shot configuration (0 to MaxDockerPool; 0: none),
	// which takes a container's start off a one-shot run.
	DockerPoolSize int `json:"dockerPoolSize"`
	// MinFreeDiskMB: new runs are refused while the data dir's filesystem
	// has less free space than this (diskspace.go); 0 turns it off.
	MinFreeDiskMB int `json:"minFreeDiskMb"`
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
		DefaultCPUs:           1,
		DefaultMemoryMB:       512,
		DefaultPids:           256,
		DefaultTimeoutMs:      30000,
		DefaultDiskMB:         2048,
		SandboxUID:            65534,
		SandboxGID:            65534,
		DefaultImage:          "debian:bookworm-slim",
		Notifications:         true,
		McpSessionIdleMinutes: 30,
		McpMaxSessions:        16,
		DockerPoolSize:        2,
	}
	s.MaxSandboxes, s.MaxRunsPerSandbox = 500, 32
	s.Concurrency, s.QueueLength, s.MaxBackgroundRuns = defaultConcurrency(), DefaultQueueLength, defaultMaxBackgroundRuns()
	s.MinFreeDiskMB = DefaultMinFreeDiskMB
	return s
}

// ExecPolicy holds the enforcement switches.
type ExecPolicy struct {
	// ExecShell: the agent shell runs sandboxed (on) or directly (off).
	ExecShell bool `json:"execShell"`
	// ExecNetwork: the sandboxed agent shell may use the network.
	ExecNetwork bool `json:"execNetwork"`
	// ExecFsMode: what the sandboxed agent shell may read ("Disk read").
	ExecFsMode backends.FsMode `json:"execFsMode"`
	// ExecLoopback: this machine's ports the agent shell may call.
	ExecLoopback []int `json:"execLoopback"`
	// RunPython / RunNode: off refuses every Python / Node code run.
	RunPython bool `json:"runPython"`
	RunNode   bool `json:"runNode"`
	// CodeNetwork: code runs (REPL) may use the network.
	CodeNetwork bool `json:"codeNetwork"`
	// SchedulerScript: scheduler scripts run sandboxed (on) or directly.
	SchedulerScript  bool `json:"schedulerScript"`
	SchedulerNetwork bool `json:"schedulerNetwork"`
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

// Run sources: who asked for a run.
const (
	SourceMCP        = "mcp"
	SourceREST       = "rest"
	SourceCLI        = "cli"
	SourceAgentShell = "agent-shell"
	SourceScheduler  = "scheduler"
	SourceCode       = "code"
	SourceSpaceApp   = "space-app"
)

// runSources are the sources a run may name; a record shows its own.
var runSources = []string{SourceMCP, SourceREST, SourceCLI, SourceAgentShell, SourceScheduler, SourceCode, SourceSpaceApp}

// RunRecord is what is kept of one execution.
type RunRecord struct {
	ID          string `json:"id"`
	SandboxID   string `json:"sandboxId"`
	SandboxName string `json:"sandboxName"`
	Source      string `json:"source"`
	// Kind is "exec", "code", "install" or "oneshot".
	Kind     string `json:"kind"`
	Command  string `json:"command,omitempty"`
	Language string `json:"language,omitempty"`
	Backend  string `json:"backend"`
	// Isolation is what was really applied: "bwrap", "docker", "none",
	// "none (degraded)" or "refused: <reason>".
	Isolation string `json:"isolation"`
	// Enforced lists the limits that held; Missing what was asked for and
	// not enforced.
	Enforced []string `json:"enforced,omitempty"`
	Missing  []string `json:"missing,omitempty"`
	// Network is true when the run could reach other hosts (the network
	// on, or connect ports); listen and loopback ports alone leave it
	// false.
	Network    bool `json:"network"`
	Background bool `json:"background,omitempty"`
	// TTLMs and IdleTTLMs are a background run's deadline and idle TTL
	// (0: none; it runs until it is stopped).
	TTLMs     int `json:"ttlMs,omitempty"`
	IdleTTLMs int `json:"idleTtlMs,omitempty"`
	// Terminal is true when the run had a pseudo-terminal.
	Terminal bool `json:"terminal,omitempty"`
	// Interactive is true when a person was attached to the run (senclaw
	// shell): its stdin came from them, and it had no deadline unless one
	// was given.
	Interactive bool `json:"interactive,omitempty"`
	// Agent names the agent whose shell asked for an agent-shell run
	// (claude-code, gemini-cli, shell).
	Agent string `json:"agent,omitempty"`
	// State is "running" for a background run still going, else "done".
	State     string `json:"state"`
	ExitCode  *int   `json:"exitCode"`
	TimedOut  bool   `json:"timedOut"`
	Truncated bool   `json:"truncated"`
	// Killed says why the engine killed the run, if it did.
	Killed     string    `json:"killed,omitempty"`
	DurationMs int64     `json:"durationMs"`
	Stdout     string    `json:"stdout"`
	Stderr     string    `json:"stderr"`
	LogFile    string    `json:"logFile,omitempty"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	// ScheduleID is the schedule that fired the run (source scheduler).
	ScheduleID string `json:"scheduleId,omitempty"`
	// AheadID is the id a one-shot's sandbox was made ahead under, when
	// the run took one the engine had ready: its cgroups carry that id,
	// not the run's (which is given when the run starts, so that runs
	// sort by their start).
	AheadID string `json:"aheadId,omitempty"`
}

// place is the id the run's cgroups and processes are known by to its
// backend: AheadID when the run took a sandbox made ahead.
func (r *RunRecord) place() string {
	if r.AheadID != "" {
		return r.AheadID
	}
	return r.ID
}

// OK reports whether the run exited 0 without timing out.
func (r *RunRecord) OK() bool {
	return r.ExitCode != nil && *r.ExitCode == 0 && !r.TimedOut && r.Killed == ""
}
