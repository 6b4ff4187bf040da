package apitype

import "github.com/senclaw/sandbox/backends"

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
	// SandboxUIDRange is the host uids a root engine gives its
	// sandboxes, one each: "auto" (the first block of 65536 above every
	// account and subordinate range of this machine) or "FIRST-LAST". A
	// change applies when the engine starts next (sandboxuids.go).
	SandboxUIDRange string `json:"sandboxUidRange"`
	// SandboxUID and SandboxGID are deprecated: sandboxes no longer
	// share one user. They name who owned the workspaces before the
	// engine gave each sandbox a uid of its own, which the engine's
	// first start on the new scheme gives them instead.
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
	// hold at once (1 to 1000); the next closes the least recently used
	// idle one, and is answered 429 only when every one is busy.
	McpMaxSessions int `json:"mcpMaxSessions"`
	// ReadyIdleMinutes is how long a persistent sandbox stays ready
	// after its last run (its next run started ahead, so that it starts
	// as fast as a one-shot): 0 to 1440 minutes, 0 keeping none ready.
	ReadyIdleMinutes int `json:"readyIdleMinutes"`
	// LANListen is the address (IP:PORT) of the LAN listener that the
	// desktop app and senclaw serve open at their start, as serve --lan
	// does: the API and /mcp over TLS to agent and tenant tokens only.
	// Empty (the default): none. Only the owner may change it.
	LANListen string `json:"lanListen"`
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
	// Engines are the named Docker engines sandboxes may be made on,
	// each on another machine; the local engine is this machine's
	// environment's and is not listed.
	Engines []EngineSettings `json:"engines"`
	// NestedProjectDepth is how many levels below a folder a sandbox
	// writes (a read-write mount, an agent's project, a --here folder)
	// the engine looks for projects whose agents' and git's files it
	// keeps read-only (0: the folder alone); NestedProjectLimit is how
	// many it keeps so, past which a run is refused (autorunfiles.go).
	NestedProjectDepth int `json:"nestedProjectDepth"`
	NestedProjectLimit int `json:"nestedProjectLimit"`
	// PinnedCAs are the CAs (PEM) the proxy verifies a looked-into host
	// with instead of this machine's trust store, by HOST[:PORT] (443
	// without one): a host with a private CA. Only a person may change
	// them.
	PinnedCAs map[string]string `json:"pinnedCAs"`
	// Guard switches the shell guard's deny groups and says what it does
	// inside a sandbox (app/guard). Only a person may change it.
	Guard GuardSettings `json:"guard"`
	// Exec holds what governs host exec, the documented off paths (the
	// Agent shell and Scheduler scripts switches off). Only a person may
	// change it.
	Exec ExecSettings `json:"exec"`
}

// ExecSettings govern host exec: who besides the owner may run a
// command on this machine with no sandbox when a switch sends it there.
type ExecSettings struct {
	// TenantHostPolicy is what host exec does for every principal but
	// the owner (agents, apps, tenants): deny (refused), warn (the
	// default: an agent's runs, with the security event
	// security.exec_tenant_host_would_deny; a tenant's is refused, as it
	// would run unconfined), or allow (runs).
	TenantHostPolicy string `json:"tenantHostPolicy"`
	// EnvOverride, read-only, is the policy the environment variable
	// SENCLAW_EXEC_TENANT_HOST_POLICY gave the engine at its start, which
	// holds over TenantHostPolicy while it runs; "" when unset.
	EnvOverride string `json:"envOverride,omitempty"`
}

// GuardSettings are the shell guard's (app/guard): each deny group on or
// off, and what a match does inside a sandbox. On the host (the Agent
// shell or Scheduler scripts switch off, the direct backend) a match of
// a group that is on always refuses the run.
type GuardSettings struct {
	PipeToInterpreter bool `json:"pipeToInterpreter"`
	ForkBomb          bool `json:"forkBomb"`
	ReverseShell      bool `json:"reverseShell"`
	DecodeAndRun      bool `json:"decodeAndRun"`
	EnvDump           bool `json:"envDump"`
	ProtectedPaths    bool `json:"protectedPaths"`
	Unreadable        bool `json:"unreadable"`
	// Sandbox is what a match does inside a sandbox: warn (the run goes
	// on, and its record and reply say what matched), deny, or off.
	Sandbox string `json:"sandbox"`
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

// EngineSettings is a named Docker engine on another machine: by a
// Docker context, or by its host (tcp:// with TLS, or a unix:// socket
// forwarded from it) and TLS material (paths on the engine's machine).
// TLS is always verified: a context that skips verification, and tcp://
// without a CA, are refused.
type EngineSettings struct {
	Name    string `json:"name"`
	Context string `json:"context,omitempty"`
	Host    string `json:"host,omitempty"`
	CACert  string `json:"caCert,omitempty"`
	Cert    string `json:"cert,omitempty"`
	Key     string `json:"key,omitempty"`
}
