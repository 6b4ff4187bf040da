// Package landlock runs sandboxed commands under the Linux Landlock LSM,
// where bubblewrap cannot start (inside containers, under Ubuntu's
// restrictions on user namespaces): no namespace and no privilege needed.
//
// Landlock confines the process that asks for it, so the engine starts
// itself again as a small helper (the hidden subcommand HelperCommand,
// which main dispatches first of all) with a fixed, empty environment.
// The helper reads the run's whole setup from a pipe (never from its
// argv or environment), marks every descriptor beyond 0-2 close-on-exec,
// drops to the sandbox user when the engine is root (no supplementary
// groups, no capabilities, no_new_privs), sets the rlimits, loads the
// seccomp filter (seccompfilter's variant for a sandbox without a
// network namespace), restricts itself with Landlock (filesystem, TCP and
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

	"github.com/senclaw/sandbox/backends"
)

// Name is the backend name used in Capability.Backend.
const Name = "landlock"

// HelperCommand is the hidden subcommand that makes the senclaw binary
// the Landlock helper. main dispatches it before anything else (RunHelper).
const HelperCommand = "__landlock-helper"

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
	// SandboxUser is who the probe's trial run runs as: nil means uid/gid
	// 65534 when the engine is root, the engine's own user otherwise. The
	// engine passes the same user it puts in Spec.User.
	SandboxUser *backends.Credential
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
}

var _ backends.Backend = (*Backend)(nil)

// New returns a Backend configured by opts.
func New(opts Options) *Backend {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backend{opts: opts, log: log, host: newHostFacts()}
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
