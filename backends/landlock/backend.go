// Package landlock runs sandboxed commands under Landlock, where bubblewrap
// cannot start.
//
// Landlock is a Linux LSM that needs no namespace and no privilege, so it
// works inside containers and under Ubuntu's restrictions on user
// namespaces.
//
// Landlock confines the process that asks for it, so the engine starts
// itself again as a small helper (HelperCommand in the reexec table)
// with a fixed, empty environment.
// The helper reads the run's whole setup from a pipe (never from its
// argv or environment), marks every descriptor beyond 0-2 close-on-exec,
// drops to the sandbox user when the engine is root (no supplementary
// groups, no capabilities, no_new_privs), sets the rlimits, loads the
// seccomp filter (seccompfilter's variant for a sandbox without a
// network or IPC namespace), restricts itself with Landlock (filesystem, TCP and
// scope rules in one ruleset, never best effort), for a run with network
// hands the engine its connect, bind and listen calls (unixguard's inet
// rules: Landlock's TCP rules name ports, not addresses) and execs the
// command with the environment the runner built. The engine puts it into
// the run's cgroups before it reads its setup.
//
// Grants turns a Spec's fs mode into Landlock rules without touching the
// system; Backend.Start runs the helper; Backend.Probe says whether it
// works here (ABI 3 or later and a trial run that proves a write outside
// the workspace is refused).
package landlock

import (
	"log/slog"
	"sync/atomic"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
	"github.com/senclaw/sandbox/backends/reexec"
)

// Name is the backend name used in Capability.Backend.
const Name = "landlock"

// HelperCommand is the first argument that makes the engine's executable
// the Landlock helper (its name in the reexec table, which runs RunHelper).
const HelperCommand = "__landlock-helper"

func init() { reexec.Register(HelperCommand, func([]string) int { return RunHelper() }) }

// MinABI is the oldest Landlock ABI the backend runs with: ABI 3 is the
// first that covers truncate(2), without which a read-only file could be
// emptied.
const MinABI = 3

// Options configure a Backend.
type Options struct {
	// Helper is the senclaw executable to start as the helper; "" is this
	// process's own executable.
	Helper string
	// Logger receives probe state changes; nil discards them.
	Logger *slog.Logger
	// SandboxUser is who the probe's trial run runs as, until the engine
	// gives its own (SetTrialUser: a root engine's uid that no sandbox
	// has). nil means the engine's own user when it is not root, else
	// uid/gid 65534 (for a backend used outside an engine).
	SandboxUser *backends.Credential
	// Cgroups is how the engine limits runs (limits.Host, shared by the
	// backends that start host processes); nil looks for cgroups the
	// engine may make itself, and asks no one.
	Cgroups *limits.Host
}

// Backend starts processes under Landlock. Create it with New.
type Backend struct {
	opts Options
	log  *slog.Logger

	history backends.ProbeHistory

	// noCgroups makes Start use the rlimit fallback (tests only).
	noCgroups bool

	// host holds what Start learns of the machine once (Linux only).
	host hostFacts
	// trialUser is the engine's (SetTrialUser).
	trialUser atomic.Pointer[backends.Credential]
}

var _ backends.Backend = (*Backend)(nil)
var _ backends.TrialUserSetter = (*Backend)(nil)

// SetTrialUser sets who the probe's trial run runs as.
func (b *Backend) SetTrialUser(u *backends.Credential) { b.trialUser.Store(u) }

// probeUser is who the probe's trial run runs as.
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
	return &Backend{opts: opts, log: log, host: newHostFacts(opts.Cgroups)}
}

// Name returns "landlock".
func (b *Backend) Name() string { return Name }

// SetupError is the helper failing to set up the sandbox before the
// command ran (a rule the kernel refused, a credential it could not drop).
type SetupError struct {
	// Message is the helper's own words.
	Message string
}

// Error says that the helper failed and quotes it.
func (e *SetupError) Error() string { return "landlock could not set up the sandbox: " + e.Message }

// RefusedError is a Start refused by policy before anything ran: a rule
// the kernel's Landlock cannot enforce, or a sandbox that would run as root.
type RefusedError struct {
	// Reason says in words what was refused and what to do.
	Reason string
}

// Error says why the start was refused.
func (e *RefusedError) Error() string { return "refusing to start the sandbox: " + e.Reason }
