// Package bwrap runs sandboxed commands with bubblewrap on Linux.
//
// A run gets a new user, pid, ipc, uts, cgroup and network namespace (the
// network, when allowed, goes through the engine's proxy via
// backends/netfwd), a read-only view of the host chosen by the fs mode, the
// workspace as the only writable directory, a seccomp filter from
// seccompfilter, and cgroup or rlimit resource limits.
//
// Args turns a Spec into bwrap's argument list without touching the system;
// Backend.Start runs it; Backend.Probe says whether it works here.
package bwrap

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
	"github.com/senclaw/sandbox/backends/seccompfilter"
)

// Name is the backend's stable name.
const Name = "bwrap"

// Options configure a Backend.
type Options struct {
	// Binary is the bwrap executable; "" looks "bwrap" up on PATH.
	Binary string
	// Logger receives probe state changes; nil discards them.
	Logger *slog.Logger
	// SandboxUser is who the probe's trial sandbox runs as, until the
	// engine gives its own (SetTrialUser: a root engine's uid that no
	// sandbox has). nil means the engine's own user when it is not root,
	// else uid/gid 65534 (for a backend used outside an engine).
	SandboxUser *backends.Credential
	// Launcher is the engine's executable, which main runs as the idmap
	// launcher when its first argument is idmap.Arg; IDMapDir is an
	// empty directory of the engine's, traversable by the sandbox user,
	// whose mount points (idmap.Point) the launcher attaches a run's
	// idmapped mounts at, in its own mount namespace. Without both, a
	// run with Mount.IDMap is refused.
	Launcher, IDMapDir string
	// Cgroups is how the engine limits runs (limits.Host, shared by the
	// backends that start host processes); nil looks for cgroups the
	// engine may make itself, and asks no one.
	Cgroups *limits.Host
}

// Backend starts processes under bwrap. Create it with New.
type Backend struct {
	opts Options
	log  *slog.Logger

	history backends.ProbeHistory

	// noCgroups makes Start use the rlimit fallback (tests only).
	noCgroups bool

	// seccomp is the assembled filter; it never changes, so it is built
	// once, on first use. noSetID is its variant for runs with an
	// idmapped mount, which make no setuid or setgid file.
	seccomp, noSetID func() ([]byte, error)
	// host holds what Start learns of the machine once (Linux only).
	host hostFacts
	// trialUser is the engine's (SetTrialUser).
	trialUser atomic.Pointer[backends.Credential]
	// found is bwrap's path as binary last found it on the PATH.
	found atomic.Pointer[foundBinary]
}

// foundBinary is where the PATH had a name.
type foundBinary struct{ name, path string }

var _ backends.Backend = (*Backend)(nil)
var _ backends.TrialUserSetter = (*Backend)(nil)

// SetTrialUser sets who the probe's trial sandbox runs as.
func (b *Backend) SetTrialUser(u *backends.Credential) { b.trialUser.Store(u) }

// probeUser is who the probe's trial sandbox runs as.
func (b *Backend) probeUser() *backends.Credential {
	if u := b.trialUser.Load(); u != nil {
		return u
	}
	return backends.DefaultSandboxUser(b.opts.SandboxUser)
}

// New returns a Backend configured by opts.
func New(opts Options) *Backend {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	noSetID := func() ([]byte, error) { return seccompfilter.ProgramFor(seccompfilter.Options{NoSetID: true}) }
	return &Backend{opts: opts, log: log, seccomp: sync.OnceValues(seccompfilter.Program), noSetID: sync.OnceValues(noSetID), host: newHostFacts(opts.Cgroups)}
}

// Name returns "bwrap".
func (b *Backend) Name() string { return Name }

// Network enforcement in words, for Enforcement.
const (
	netNone    = "network: own namespace with loopback only, no route out"
	netProxied = "network: own namespace with loopback only; egress only through the engine's proxy (HTTP 127.0.0.1:3128, SOCKS5 127.0.0.1:1080 inside), which applies the port, domain and address rules; UDP and other non-TCP traffic is not forwarded (so it is blocked), and programs that ignore the proxy variables reach only the forwarded loopback ports"
)

// SetupError is bwrap failing to build the sandbox before the command ran
// (a missing mount source, no user namespaces, ...).
type SetupError struct {
	// Message is bwrap's own message, e.g. "bwrap: Can't find source path".
	Message string
}

// Error says that bwrap failed and quotes it.
func (e *SetupError) Error() string { return "bwrap could not set up the sandbox: " + e.Message }

// RefusedError is a Start refused by policy before anything ran, such as a
// sandbox that would run as root.
type RefusedError struct {
	// Reason says in words what was refused and what to do.
	Reason string
}

// Error says why the start was refused.
func (e *RefusedError) Error() string { return "refusing to start the sandbox: " + e.Reason }
