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
	// backend (no isolation at all for the owner's; every other
	// principal's are host exec, under Exec.TenantHostPolicy). Off by
	// default: an agent asking for "direct" must not be able to leave
	// the sandbox on its own.
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
	// Exec holds what governs host exec: the documented off paths (the
	// Agent shell and Scheduler scripts switches off) and runs on the
	// direct backend. Only a person may change it.
	Exec ExecSettings `json:"exec"`
}

// ExecSettings govern host exec: who besides the owner may run a
// command on this machine with no sandbox when a switch, or a sandbox
// on the direct backend, sends it there.
type ExecSettings struct {
	// TenantHostPolicy is what host exec does for every principal but
	// the owner (agents, apps, tenants), whose commands run under a
	// Landlock domain of their own where Landlock is: deny (refused),
	// warn (the default: runs, with the security event
	// security.exec_tenant_host_would_deny), or allow (runs). Without
	// Landlock, warn runs an agent's unconfined and refuses a tenant's,
	// and allow refuses a command naming a tenant's directory.
	TenantHostPolicy string `json:"tenantHostPolicy"`
	// HostTimeoutSeconds is the timeout of a host exec whose request
	// gives none (60 by default, 1 to 86400), and the longest a
	// principal other than the owner may ask for. On timeout the run's
	// whole process tree is killed.
	HostTimeoutSeconds int `json:"hostTimeoutSeconds"`
	// CredentialedCommands are the programs, besides gh, gcloud, aws,
	// az, kubectl, terraform, psql and docker, whose host exec is
	// refused under deny for every principal but the owner (bare names:
	// vault, heroku).
	CredentialedCommands []string `json:"credentialedCommands"`
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

// PolicyCheckRequest asks what the layered policy says of a command in
// a project, running nothing (senclaw policy check).
type PolicyCheckRequest struct {
	// ProjectDir is the project whose .senclaw/policy.json narrows the
	// owner's; "" for the owner's policy alone.
	ProjectDir string `json:"projectDir,omitempty"`
	// AgentShell judges the command as the agent shell would run it in
	// the project; else as senclaw run --here would.
	AgentShell bool `json:"agentShell,omitempty"`
	// Command (a shell line) or Argv; neither: the policy alone.
	Command string   `json:"command,omitempty"`
	Argv    []string `json:"argv,omitempty"`
}

// PolicyCheck is the answer of a policy check: the effective policy with
// the source of every value, and whether the run would be refused.
type PolicyCheck struct {
	// Owner and Project are the files of the two layers ("" for a
	// project without one).
	Owner   string `json:"owner"`
	Project string `json:"project,omitempty"`
	// Values is the effective policy, key by key.
	Values []PolicyValue `json:"values"`
	// Notes name the project's keys that were ignored (they would have
	// widened the owner's policy) and what the policy takes down.
	Notes []string `json:"notes"`
	// Allowed says the run would start; Refusal says why not. Isolation
	// is what it would get.
	Allowed   bool   `json:"allowed"`
	Refusal   string `json:"refusal,omitempty"`
	Isolation string `json:"isolation,omitempty"`
	// BrokenFile is a policy file that cannot be read as a policy: the
	// run would be refused with it.
	BrokenFile *PolicyFileProblem `json:"brokenFile,omitempty"`
}

// PolicyValue is one key of the effective policy and the file that
// decided it.
type PolicyValue struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
}

// PolicyFileProblem is where a policy file is broken.
type PolicyFileProblem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// PolicyLearnRequest runs a command once, traced, in the widest sandbox
// the owner's policy allows its project, and proposes the narrowest
// project policy under which it would have run (senclaw run --learn).
type PolicyLearnRequest struct {
	ProjectDir string   `json:"projectDir"`
	Command    string   `json:"command,omitempty"`
	Argv       []string `json:"argv,omitempty"`
	TimeoutMs  int      `json:"timeoutMs,omitempty"`
	// Backend is the backend of the learn run ("": the best available).
	Backend string `json:"backend,omitempty"`
	// Write saves the proposal as the project's .senclaw/policy.json.
	Write bool `json:"write,omitempty"`
}

// PolicyLearn is what a learn run did and the policy it proposes.
type PolicyLearn struct {
	Run    RunRecord `json:"run"`
	Stdout string    `json:"stdout"`
	Stderr string    `json:"stderr"`
	// File is the project's policy file; Proposal its proposed text.
	File     string `json:"file"`
	Proposal string `json:"proposal"`
	// Diff is the proposal against the file as it is, one key a line:
	// "- key: old" and "+ key: new".
	Diff []string `json:"diff"`
	// Notes say what the proposal could not propose (it would need the
	// owner to allow it) and what it did not measure.
	Notes []string `json:"notes"`
	// Written says that the proposal was saved into File.
	Written bool `json:"written"`
}

// PolicyApplyRequest saves a policy (a learn run's proposal) as a
// project's .senclaw/policy.json.
type PolicyApplyRequest struct {
	ProjectDir string `json:"projectDir"`
	Policy     string `json:"policy"`
}
