package apitype

import (
	"strings"
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
	Kind string `json:"kind,omitempty"`
	// Tenant is the slug of the tenant the sandbox belongs to; empty is
	// the owner's own (the master tenant). Its runs are that tenant's.
	Tenant  string `json:"tenant,omitempty"`
	Backend string `json:"backend"`
	// Engine is the named Docker engine (of the settings) the sandbox
	// lives on, on another machine; "" is this machine's. Its workspace
	// is then a volume there, seen at Workspace (/work) inside its
	// container.
	Engine string `json:"engine,omitempty"`
	Image  string `json:"image,omitempty"`
	// Workspace is the directory the sandbox may write.
	Workspace string `json:"workspace"`
	// OwnWorkspace is true when Workspace is ours (under the data dir's
	// workspaces/), the only case where a purge may remove it.
	OwnWorkspace bool            `json:"ownWorkspace"`
	FsMode       backends.FsMode `json:"fsMode"`
	// Allowlist, when set, are the folders its allowlist mode reads
	// instead of the settings' (a project's policy file narrowed them).
	Allowlist []string           `json:"allowlist,omitempty"`
	Mounts    []backends.Mount   `json:"mounts"`
	Network   bool               `json:"network"`
	Ports     backends.PortRules `json:"ports"`
	CPUs      float64            `json:"cpus"`
	MemoryMB  int                `json:"memoryMb"`
	Pids      int                `json:"pids"`
	DiskMB    int                `json:"diskMb"`
	TimeoutMs int                `json:"timeoutMs"`
	Env       map[string]string  `json:"env"`
	// Secrets are the engine's secrets its runs get placeholders of:
	// names only, never values.
	Secrets []string `json:"secrets,omitempty"`
	// TraceEnabled traces the sandbox's runs; TraceAll keeps every read
	// instead of folding the system roots (trace.go).
	TraceEnabled bool `json:"traceEnabled"`
	TraceAll     bool `json:"traceAll,omitempty"`
	// UID and GID are the host uid and gid a root engine runs the
	// sandbox's code as: its own, from the sandboxUidRange setting's
	// range, which no other sandbox and no host process has (sandboxuids.go).
	// Absent for an engine that is not root: its sandboxes run as its
	// own user in a user namespace.
	UID uint32 `json:"uid,omitempty"`
	GID uint32 `json:"gid,omitempty"`
	// APIAccess lets the sandbox reach the engine's own API port through
	// its loopback rules: only a Space App with daemonApi on has it, and
	// its own token there reaches only its own routes. No SandboxConfig
	// field sets it.
	APIAccess bool `json:"apiAccess,omitempty"`
	// State is "idle", "running", "error" or "unreachable" (its engine
	// elsewhere does not answer); running and unreachable are derived
	// when the sandbox is read.
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

// SandboxConfig is what a caller may set on create and update. Nil
// pointers and nil slices mean "not given": the default on create,
// unchanged on update.
type SandboxConfig struct {
	Name    *string `json:"name,omitempty"`
	Backend *string `json:"backend,omitempty"`
	// Engine, on create only, puts the sandbox on a named Docker engine
	// of the settings ("local" or "" is this machine's).
	Engine   *string          `json:"engine,omitempty"`
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
	// AllowHTTP replaces the sandbox's HTTP rules (the proxy looks into
	// their hosts and lets through only what they allow); nil leaves
	// them as they are, [] empties them.
	AllowHTTP []backends.HTTPRule `json:"allowHttp,omitzero"`
	// Secrets replaces the secrets its runs get placeholders of; nil
	// leaves them as they are, [] empties them.
	Secrets []string `json:"secrets,omitzero"`
	// ProjectDir, on create only, makes a host folder of the caller's the
	// sandbox's writable workspace (senclaw run --here) instead of a
	// workspace of its own. It is checked as a read-write mount is, never
	// purged, and has no disk quota.
	ProjectDir *string `json:"projectDir,omitempty"`
}

// Notes is what a reply says in words about a sandbox or a run: Note is
// one line a person reads first; Details are the rest, one fact an item;
// Warnings are the rules that were asked for and are not enforced, and
// only those (a design limit that holds for everyone, such as UDP not
// being forwarded, is a detail).
type Notes struct {
	Note     string   `json:"note"`
	Details  []string `json:"details"`
	Warnings []string `json:"warnings"`
}

// Text is the note, its warnings and its details in one paragraph, for
// logs and for readers that show one string.
func (n Notes) Text() string {
	parts := []string{n.Note}
	for _, w := range n.Warnings {
		parts = append(parts, "not enforced: "+w)
	}
	return strings.Join(append(parts, n.Details...), "; ")
}

// PortsResult is the answer of SetPorts.
type PortsResult struct {
	Sandbox     *Sandbox           `json:"sandbox"`
	Ports       backends.PortRules `json:"ports"`
	ReachableAt []string           `json:"reachableAt"`
	// Notes say precisely what is and is not enforced, and by what.
	Notes
}

// MountResult is the answer of AddMount.
type MountResult struct {
	Mount backends.Mount `json:"mount"`
	// At is where the folder appears inside the sandbox.
	At string `json:"at"`
	// Notes say when the change takes effect.
	Notes
}

// TerminalRequest asks for a terminal of Cols x Rows on the standard
// descriptors FDs: those of the caller that are terminals, a subset of 0,
// 1 and 2 naming 1 or 2. The others stay pipes, as they would for sh -c.
type TerminalRequest struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
	FDs  []int  `json:"fds"`
}

// Control is one message of an attached caller during its run: a new
// terminal size, or a signal for the command.
type Control struct {
	// Cols and Rows, when not zero, are the terminal's new size.
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	// Signal names a signal to pass to the command, as kill(1) would to
	// its pid: one of Signals.
	Signal string `json:"signal,omitempty"`
}

// Stats is what runs in a sandbox now, and its recent history.
type Stats struct {
	SandboxID string `json:"sandboxId"`
	// Source is "host" (process sampling) or "container" (the Docker
	// API's stats and process list, over the link for a remote engine).
	Source string `json:"source"`
	// Engine is the named engine the container is on ("" this machine's).
	Engine        string        `json:"engine,omitempty"`
	Running       bool          `json:"running"`
	Processes     []ProcessInfo `json:"processes"`
	CPUPercent    float64       `json:"cpuPercent"`
	RSSMB         float64       `json:"rssMb"`
	MemoryLimitMB int           `json:"memoryLimitMb"`
	SampledAtMs   int64         `json:"sampledAtMs"`
	History       []StatsPoint  `json:"history"`
	// Denied counts the connections the egress proxy refused since the
	// engine started; RecentDenied are the last distinct refused hosts
	// (up to 12, newest last).
	Denied       int      `json:"denied"`
	RecentDenied []string `json:"recentDenied"`
	// Note is set when sampling failed or says something is missing.
	Note string `json:"note,omitempty"`
}

// ProcessInfo is one process of a sandbox.
type ProcessInfo struct {
	Pid        int     `json:"pid"`
	PPid       int     `json:"ppid"`
	Pgid       int     `json:"pgid"`
	Command    string  `json:"command"`
	CPUPercent float64 `json:"cpuPercent"`
	RSSMB      float64 `json:"rssMb"`
	RSSBytes   uint64  `json:"rssBytes"`
	ElapsedSec float64 `json:"elapsedSec"`
}

// StatsPoint is one point of a sandbox's CPU and memory history.
type StatsPoint struct {
	AtMs       int64   `json:"atMs"`
	CPUPercent float64 `json:"cpuPercent"`
	RSSMB      float64 `json:"rssMb"`
}

// FsModeInfo describes a fs mode for people.
type FsModeInfo struct {
	Mode        backends.FsMode `json:"mode"`
	Label       string          `json:"label"`
	Description string          `json:"description"`
}

// Capabilities is what this machine can isolate with.
type Capabilities struct {
	OS string `json:"os"`
	// State is "isolated" when at least one isolating backend is healthy,
	// else "degraded": code can only run with no barrier.
	State string `json:"state"`
	// Summary says the state in one sentence.
	Summary string `json:"summary"`
	// Recommended is the backend a run without a choice gets.
	Recommended string                `json:"recommended"`
	Backends    []backends.Capability `json:"backends"`
	// Facilities are probes of things that are not backends (Landlock).
	Facilities []backends.Capability `json:"facilities,omitempty"`
	// Engines are the Docker engines: the local one and the named ones
	// of the settings, each with its state, version, CPUs and memory.
	Engines []EngineInfo `json:"engines"`
}

// EngineInfo is a Docker engine on the capability card.
type EngineInfo struct {
	// Name is "local" (this machine's environment's) or a name of the
	// settings' engines.
	Name string `json:"name"`
	// Remote is true for an engine on another machine.
	Remote bool `json:"remote"`
	// Host is the daemon's address, From where it came from.
	Host  string              `json:"host,omitempty"`
	From  string              `json:"from,omitempty"`
	State backends.ProbeState `json:"state"`
	// Version is the daemon's; CPUs and MemoryBytes what it has.
	Version     string `json:"version,omitempty"`
	CPUs        int    `json:"cpus,omitempty"`
	MemoryBytes int64  `json:"memoryBytes,omitempty"`
	Reason      string `json:"reason"`
	// Sandboxes is how many sandboxes live there.
	Sandboxes int `json:"sandboxes"`
}

// SandboxReply is the answer of a sandbox's create and update: the
// sandbox, and in words what it gets (Notes).
type SandboxReply struct {
	Sandbox *Sandbox `json:"sandbox"`
	Notes
}

// FsModeReply is the answer of POST /sandboxes/{id}/fs-mode.
type FsModeReply struct {
	OK      bool            `json:"ok"`
	Sandbox *Sandbox        `json:"sandbox"`
	FsMode  backends.FsMode `json:"fsMode"`
	Label   string          `json:"label"`
	Notes
}

// CacheInfo is one set of package caches as the API lists it.
type CacheInfo struct {
	// Kind is "project" (kept in the engine's caches, bound into the
	// project's runs) or "sandbox" (in a persistent sandbox's workspace).
	Kind string `json:"kind"`
	// Project is a project's folder; SandboxID the sandbox's (for a
	// project, its agent sandbox's when it has one).
	Project   string `json:"project,omitempty"`
	SandboxID string `json:"sandboxId,omitempty"`
	// Dir is where the caches are on this machine.
	Dir   string `json:"dir"`
	Bytes int64  `json:"bytes"`
	Files int64  `json:"files"`
}
