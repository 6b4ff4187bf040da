// Package backends defines what a sandbox backend is.
//
// A backend turns a resolved Spec into a running, confined process, and can
// say, through Probe, whether it works on this machine and which rules it
// enforces.
//
// The interface is small on purpose. Everything a backend must do is in
// Backend; what only some backends can do lives in optional interfaces that
// callers discover with a type assertion.
package backends

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// FsMode says what a sandbox may read from the host's disk. Writes are jailed
// to the workspace and the read-write mounts in every mode.
type FsMode string

const (
	// FsStrict exposes the workspace, the mounts and the system roots.
	FsStrict FsMode = "strict"
	// FsAllowlist is strict plus the allowlist paths from the settings.
	FsAllowlist FsMode = "allowlist"
	// FsOpen exposes the whole disk read-only, except the hidden paths
	// (secret folders, the home directory, the engine's own data).
	FsOpen FsMode = "open"
)

// FsModes lists the valid modes in the order they are shown to people.
var FsModes = []FsMode{FsStrict, FsAllowlist, FsOpen}

// Valid reports whether m is one of the known modes.
func (m FsMode) Valid() bool {
	return m == FsStrict || m == FsAllowlist || m == FsOpen
}

// Mount is a host directory made visible inside a sandbox under the
// workspace, at Target (relative to the workspace).
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly"`
	// Copy, for a sandbox on another machine (a remote Docker engine),
	// copies Source into the sandbox once, when the mount is made,
	// instead of binding it (a folder of this machine cannot be bound
	// there); later changes on either side stay on that side.
	Copy bool `json:"copy,omitempty"`
	// IDMap, for a run of a root engine, binds a Source that the sandbox
	// user cannot write (read-write) or reach and read (read-only)
	// through an idmapped mount: the source's owner is the sandbox user
	// there (backends/idmap). The engine sets it per run; only an
	// IDMapper backend is given one.
	IDMap bool `json:"-"`
}

// PortRules are the network permissions finer than the network switch.
type PortRules struct {
	// Listen are ports (>= 1024) the sandbox may bind, reachable from the
	// host at 127.0.0.1 only.
	Listen []int `json:"listen"`
	// Connect are remote ports the sandbox may dial.
	Connect []int `json:"connect"`
	// Loopback are this machine's own service ports the sandbox may call.
	// Empty means none.
	Loopback []int `json:"loopback"`
	// Domains, when not empty, are the only names the sandbox may reach
	// (exact, or "*.example.com" for the name and its subdomains).
	Domains []string `json:"domains"`
	// DenyDomains are names it may never reach; deny wins over allow.
	DenyDomains []string `json:"denyDomains"`
	// AllowHTTP limits what the sandbox may ask of some hosts: the
	// proxy looks into its connections to a host a rule names and lets
	// through only the requests some rule of that host allows.
	AllowHTTP []HTTPRule `json:"allowHttp,omitempty"`
}

// HTTPRule allows some HTTP requests to a host.
type HTTPRule struct {
	// Host is HOST[:PORT] ("*." for the name and its subdomains); without
	// a port the rule holds on 443 and 80.
	Host string `json:"host"`
	// Methods are the methods allowed (GET, POST, ...); empty is any.
	Methods []string `json:"methods,omitempty"`
	// Paths are the paths allowed: a prefix ("/repos/"), or a glob over
	// the whole path when it holds * (within a segment), ** (across
	// segments) or ? ("/repos/*/pulls"); empty is any.
	Paths []string `json:"paths,omitempty"`
}

// Empty reports whether no port is named at all. Domain lists alone do
// not ask for network.
func (p PortRules) Empty() bool {
	return len(p.Listen) == 0 && len(p.Connect) == 0 && len(p.Loopback) == 0
}

// Limits are the resource limits of one run.
type Limits struct {
	CPUs     float64 `json:"cpus"`
	MemoryMB int     `json:"memoryMb"`
	Pids     int     `json:"pids"`
	// DiskMB is the workspace quota.
	DiskMB int `json:"diskMb"`
}

// Credential is the host user and group a sandboxed process runs as.
type Credential struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// Spec is everything a backend needs to start one confined process. It is
// fully resolved: paths are absolute and canonical, lists are validated, the
// environment is complete. A backend never reads the engine's environment.
type Spec struct {
	SandboxID string
	RunID     string
	// Workspace is the host directory the process may write; it is also its
	// working directory and HOME.
	Workspace string
	// WorkspaceExact says that Workspace is the directory's real path as
	// the engine checked it (an agent's validated project dir, or the
	// engine's own workspace): a backend that can binds the very
	// directory found there, and refuses a path that has since come to
	// go through a symlink.
	WorkspaceExact bool
	// WorkspaceIDMap binds a Workspace the sandbox user cannot write (a
	// root engine's project folder of root's) through an idmapped mount,
	// as Mount.IDMap does a mount; it implies WorkspaceExact. The engine
	// sets it per run; only an IDMapper backend is given one.
	WorkspaceIDMap bool
	// Caches are folders of the engine's own (a project's package
	// caches, app/pkgcache) bound read-write into the sandbox's private
	// /tmp: Source on the host, Target an absolute path under /tmp in the
	// sandbox, IDMap as for a Mount (the engine owns them; each run's
	// sandbox user is their owner there). Only a backend that has a
	// private /tmp (bwrap) is given any.
	Caches []Mount
	// Argv is the command to run inside; Argv[0] is resolved inside the
	// sandbox's PATH.
	Argv []string
	// Env is the complete environment of the process ("K=V").
	Env    []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Terminal, when set, is the slave side of a pseudo-terminal the
	// engine opened for this run (its master stays with the engine). The
	// command gets it as its controlling terminal, and as each standard
	// descriptor listed in TerminalFDs (0, 1, 2) in place of Stdin, Stdout
	// or Stderr. Only a backend implementing Terminals is given one.
	Terminal    *os.File
	TerminalFDs []int
	// Helper is the host path of the senclaw-netfwd binary, which a
	// backend may bind in to set up a terminal inside (its --tty role)
	// when the run has no network plumbing to bring it.
	Helper string

	FsMode FsMode
	// ReadPaths are extra read-only paths (the allowlist in allowlist mode).
	ReadPaths []string
	// Hidden are host paths masked from the sandbox in open mode (home,
	// secret folders, the engine's data and config dirs).
	Hidden []string
	// Masked are host paths of programs the run may neither execute nor
	// read, whatever its fs mode: the Python and Node interpreters when
	// the Run Python / Run Node switches are off. A backend that cannot
	// mask them refuses the run rather than start it with them visible.
	Masked []string
	// MaskedRuntimes are the runtimes (RuntimePython, RuntimeNode) whose
	// switch is off, the reason for Masked. A backend that runs programs
	// other than the host's (a container's image) masks these runtimes'
	// programs and libraries in what it runs, and refuses the run when it
	// cannot.
	MaskedRuntimes []string
	Mounts         []Mount
	// Protected are host paths in the workspace or in a read-write mount
	// source that the sandbox may read but never change, remove or
	// replace: the files of a person's folder through which programs on
	// this machine run code without asking (app/autorun: agents'
	// settings, git's config and hooks). Each is a directory or a file,
	// never a symbolic link (the engine refuses those); one that does not
	// exist, the sandbox must not be able to make either. A backend that
	// binds per run (bwrap) gets each existing, the engine having made an
	// empty directory for a missing one; a backend that cannot keep one
	// read-only, or make a missing one impossible, says so in
	// Enforcement.Missing.
	Protected []string

	Network bool
	Ports   PortRules
	// Net, when set, gives the sandbox the engine's network plumbing: its
	// own namespace stays without a route out, and the forwarder in front
	// of Argv relays loopback ports to the engine's proxy. Nil means no
	// network at all.
	Net    *NetPlumbing
	Limits Limits
	// UnixGuard, when set, asks the backend to let the sandbox reach no
	// pathname Unix socket outside its own places (backends/unixguard).
	// bwrap does; the engine sets it for bwrap runs only.
	UnixGuard *UnixGuard
	// User is who the process runs as on the host; nil means the engine's
	// own user (which must not be root for an isolating backend, unless
	// HostExec).
	User *Credential
	// HostExec marks a confined host exec: a command a documented off
	// path (or a sandbox on the direct backend) sends to this machine
	// for a principal other than the owner, which runs as the engine's
	// own user (root included, with every capability dropped) and not as
	// a sandbox uid, unless User names one (a root engine's direct
	// sandbox keeps its own). Only Landlock honours it; the engine sets
	// it for Landlock runs only.
	HostExec bool
	// WritePaths are directories a host exec may also write where they
	// are, with no link in the workspace (the tenant's own directory).
	// Only Landlock honours them, and only with HostExec.
	WritePaths []string
	// Image is the container image, for container backends.
	Image string
	// OneShot marks a throwaway sandbox that lives for this one run: a
	// container backend may take a pre-created container from a pool.
	OneShot bool
	// Trace, when set, asks the backend to trace the run and report what
	// it observes, as it happens. A backend that cannot trace from outside
	// the sandbox says so in Enforcement.Missing.
	Trace func(TraceEvent)
	// Refused, when set, is told of each connect the Unix socket guard
	// refused the run ("unix:/path", or an inet address of a run without
	// a network namespace), for the run's list of refusals.
	Refused func(target string)
	// Files are written into the workspace, as the sandbox user, just
	// before the command starts, by a backend whose workspace the engine
	// cannot reach itself (a sandbox on another machine): the run's code
	// file, the trace hooks.
	Files []File
}

// File is a file Spec.Files puts in the workspace.
type File struct {
	// Path is relative to the workspace; its folders are made.
	Path string
	Data []byte
}

// NetPlumbing is what a backend binds into a sandbox so that its traffic
// goes through the engine's egress proxy (see backends/netfwd).
type NetPlumbing struct {
	// Dir is the host directory bound at netfwd.MountDir: the engine's
	// proxy socket is in it, and the forwarder makes the listen sockets.
	Dir string
	// Forwarder is the host path of the senclaw-netfwd binary, bound
	// read-only at netfwd.BinaryPath.
	Forwarder string
	// Listen are the ports the forwarder serves on Unix sockets in Dir for
	// the engine's host-side forwarding.
	Listen []int
	// Loopback are the host service ports the forwarder opens on loopback
	// inside, relayed to the proxy (which checks them per connection).
	Loopback []int
	// Refused, when set, is told of each connection to a run's door to
	// the proxy (Landlock's, a port on 127.0.0.1) that came from outside
	// the run and was closed: from says where from and whose, why what
	// was wrong with it.
	Refused func(from, why string)
	// Serve, for a sandbox on another machine (no directory of this one
	// can be bound there, so Dir is empty), takes each connection the
	// sandbox opens to the engine's proxy, carried over the backend's own
	// link; the engine's proxy answers it as one from Dir's socket.
	Serve func(net.Conn)
	// CABundle, for a sandbox on another machine (no Dir to put it in),
	// is the bundle of trusted roots and the engine's proxy CA that the
	// backend writes at netfwd.MountDir/netfwd.CABundle in the sandbox,
	// as the sandbox user, before the run: the engine's CA variables
	// point there as they do for a local sandbox.
	CABundle []byte
}

// UnixGuard is what a backend needs for the Unix socket guard.
type UnixGuard struct {
	// Forwarder is the host path of senclaw-netfwd, which loads the guard
	// inside the sandbox before the command runs where it runs anyway (a
	// backend may load the guard itself otherwise).
	Forwarder string
	// Sockets are host paths of sockets the sandbox may reach although
	// they are not in its own places: the settings' allowedSockets.
	Sockets []string
}

// TraceEvent is one action of a traced run.
type TraceEvent struct {
	TimeMs int64 `json:"tsMs"`
	Pid    int   `json:"pid"`
	// Kind is file.read, file.write, proc.spawn, net.connect, net.listen, net.dns,
	// denied or trace.truncated.
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Detail string `json:"detail,omitempty"`
	// Source is who observed it: "strace" (outside the sandbox),
	// "in-sandbox (can be tampered with)", "diff" or "proxy".
	Source string `json:"source"`
}

// Enforcement says which of a Spec's rules a started process really got.
// It goes into the run record so people see what held.
type Enforcement struct {
	// Isolation names the barrier, e.g. "bwrap", "docker", "none".
	Isolation string `json:"isolation"`
	// Limits lists the limits that are enforced and how, e.g.
	// "memory: cgroup v1", "pids: cgroup v1", "disk: rlimit+watchdog".
	Limits []string `json:"limits,omitempty"`
	// Missing lists rules that were asked for but are not enforced, in words.
	Missing []string `json:"missing,omitempty"`
}

// Process is a started sandboxed process tree.
type Process interface {
	// Pid is the host pid of the process the backend started (for bwrap,
	// bwrap itself).
	Pid() int
	// Wait waits for the process tree's leader to exit. Once it returns,
	// every process of the tree is gone.
	Wait() (ExitStatus, error)
	// Kill kills the whole process tree. It is safe to call more than once
	// and after Wait.
	Kill() error
	// Enforcement says what the process really got.
	Enforcement() Enforcement
	// Pids lists the host pids currently in the tree (best effort).
	Pids() []int
}

// Terminator is implemented by processes whose tree can be asked to end
// before it is killed: SIGTERM to every process of the tree, as
// supervisord's stopasgroup does. The caller kills the tree with Kill when
// it has not ended after its grace time.
type Terminator interface {
	Terminate() error
}

// ExitStatus is how a process ended.
type ExitStatus struct {
	// Code is the exit code, or 128+signal when it died by a signal.
	Code int `json:"code"`
	// Signal names the signal that killed it ("killed"), if any.
	Signal string `json:"signal,omitempty"`
}

// Backend starts confined processes.
type Backend interface {
	// Name is the backend's stable name ("bwrap", "docker", "direct", ...).
	Name() string
	// Probe checks whether the backend works here. It must honour ctx's
	// deadline.
	Probe(ctx context.Context) Capability
	// Start starts spec's process. It never falls back to weaker isolation:
	// if the barrier cannot be set up, it returns an error and nothing ran.
	Start(ctx context.Context, spec *Spec) (Process, error)
}

// AheadStarter is a backend that can set a sandbox up whole before its
// command is known, for a run to take later: namespaces, mounts, the
// barrier and the limits are in place and the sandbox waits, with
// nothing of it run, until Go hands it its command (the engine keeps
// one-shot sandboxes made ahead this way). The spec is Start's, with no Argv.
type AheadStarter interface {
	StartAhead(ctx context.Context, spec *Spec) (AheadProcess, error)
}

// AheadProcess is a sandbox StartAhead set up. It is the run's process, as
// Start would return it; it ends when killed (a sandbox no run took is
// given up with Kill and Wait) or when its command does.
type AheadProcess interface {
	Process
	// Go hands argv over: the command starts at once, with the spec's
	// environment, and is looked up on its PATH as Start's would be. It
	// may be called once.
	Go(argv []string) error
	// Waiting reports whether the sandbox is still there, waiting for its
	// command: false once Go handed it one, once it was given up, and once
	// it ended (killed from outside), when a run must not take it.
	Waiting() bool
}

// Terminals is implemented by backends that can give a run a terminal
// (Spec.Terminal). A run on any other backend gets pipes, and its record
// says so.
type Terminals interface {
	// GivesTerminals reports whether Start honours Spec.Terminal.
	GivesTerminals() bool
}

// Resizer is a process whose terminal is not Spec.Terminal itself but
// one it relays to (a container's, made by the Docker daemon): the
// engine passes each resize of its own terminal on.
type Resizer interface {
	Resize(cols, rows uint16) error
}

// IDMapper is implemented by backends that can bind a mount through an
// idmapped mount (Mount.IDMap). A run with such a mount on any other
// backend is refused.
type IDMapper interface {
	// IDMapsMounts reports whether Start honours Mount.IDMap, and why not.
	IDMapsMounts() (bool, string)
}

// Signaler is implemented by processes that can pass a signal to the
// command itself (not to the sandbox's init or the backend's own
// process), as kill(1) would to the command's pid.
type Signaler interface {
	Signal(sig syscall.Signal) error
}

// PoolSizer is a backend that keeps processes or containers ready for
// one-shot runs; the engine sets how many from its settings.
type PoolSizer interface {
	SetPoolSize(n int)
}

// TrialUserSetter is a backend that starts sandboxes of its own, not a
// run's (a probe's trial sandbox, an idle pooled container): a root
// engine gives it the uid they run as, one no sandbox has.
type TrialUserSetter interface {
	SetTrialUser(u *Credential)
}

// Persistent is implemented by backends that keep something per sandbox
// between runs (a container). The engine calls it on stop, delete, drift
// checks and at start-up.
type Persistent interface {
	// SandboxStatus says what the backend keeps for the sandbox spec
	// describes: StatusNone, StatusRunning, StatusStopped or
	// StatusNeedsRecreate (its saved settings no longer match).
	SandboxStatus(ctx context.Context, spec *Spec) (string, error)
	// Recreate replaces what is kept with one made from spec; workspace
	// files survive.
	Recreate(ctx context.Context, spec *Spec) error
	// StopSandbox kills every process of the sandbox and stops what is
	// kept (the container), leaving it to be started again.
	StopSandbox(ctx context.Context, sandboxID string) error
	// RemoveSandbox removes what is kept for the sandbox.
	RemoveSandbox(ctx context.Context, sandboxID string) error
	// Reconcile runs at engine start: what belongs to a sandbox for which
	// known returns false is removed, the rest adopted.
	Reconcile(ctx context.Context, known func(sandboxID string) bool) error
}

// Statuses reported by Persistent.SandboxStatus.
const (
	StatusNone          = "none"
	StatusRunning       = "running"
	StatusStopped       = "stopped"
	StatusNeedsRecreate = "needs recreate"
)

// ProbeState is where a backend stands on this machine.
type ProbeState string

const (
	// NeverSeen: the backend has never been found working here.
	NeverSeen ProbeState = "never seen"
	// SeenGone: it worked earlier in this engine's life and stopped working.
	SeenGone ProbeState = "seen and gone"
	// Healthy: it works now.
	Healthy ProbeState = "healthy"
)

// Capability is the answer of a probe.
type Capability struct {
	Backend string     `json:"backend"`
	State   ProbeState `json:"state"`
	Version string     `json:"version,omitempty"`
	// Reason says in words why the state is what it is, and what to do when
	// it is not healthy.
	Reason string `json:"reason"`
	// Isolates is false for a backend that runs code with no barrier.
	Isolates bool `json:"isolates"`
	// Enforces lists the rules it can enforce: "fs", "network", "ports",
	// "memory", "pids", "cpu", "disk", "seccomp", ...
	Enforces []string `json:"enforces"`
	// Details carries backend-specific facts (Landlock ABI, seccomp, cgroup
	// version, daemon address).
	Details map[string]string `json:"details,omitempty"`
	// CheckedAt is when the probe ran.
	CheckedAt time.Time `json:"checkedAt"`
}

// Usable reports whether the backend can start processes now.
func (c Capability) Usable() bool { return c.State == Healthy }
