// Package windows runs sandboxed commands on Windows with a restricted token
// and a Job Object.
//
// The token is a copy of the engine's whose every access must also be
// granted to the sandbox's own capability SID (or, for the system's folders,
// to ALL APPLICATION PACKAGES), with DACL grants of that SID on the
// workspace and the mounts and DENY entries on the secret folders. The Job
// Object kills on close and limits memory, process count and CPU rate. The
// process starts suspended, is put in the job, then resumed, and inherits no
// handle beyond its standard ones.
//
// Plan decides all of it as a pure function of the Spec and the host's
// facts (golden-tested on any OS); Backend.Start carries it out and
// Backend.Probe runs a trial process that must fail to write outside its
// workspace (Windows only).
package windows

import (
	"log/slog"

	"github.com/senclaw/sandbox/backends"
)

// Name is the backend's stable name.
const Name = "windows"

// Enforces are the rules the restricted token and the job enforce: the
// fs mode and the jailed writes, memory, process count and CPU. Not the
// network, not ports, not disk.
var Enforces = []string{"fs", "memory", "pids", "cpu"}

// Options configure a Backend.
type Options struct {
	// Logger receives probe state changes; nil discards them.
	Logger *slog.Logger
	// Home is the user's profile folder.
	Home string
	// TempRoot is where the probe makes its trial workspace.
	TempRoot string
}

// Backend starts processes with a restricted token. Create it with New.
type Backend struct {
	opts    Options
	log     *slog.Logger
	history backends.ProbeHistory
}

var _ backends.Backend = (*Backend)(nil)

// New returns a Backend configured by opts.
func New(opts Options) *Backend {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backend{opts: opts, log: log}
}

// Name returns "windows".
func (b *Backend) Name() string { return Name }

// state turns this probe's outcome into a state, logging changes.
func (b *Backend) state(c backends.Capability, healthy bool) backends.Capability {
	return b.history.Record(c, healthy, b.log)
}

// NetworkNote says in words what a Windows sandbox's network rules get:
// nothing, and why the network cannot be off.
func (b *Backend) NetworkNote(network bool, rules backends.PortRules) string {
	if !network && rules.Empty() {
		return "NOT AVAILABLE with the network off: runs of this sandbox are refused, because " + NoNetworkReason
	}
	return "not enforced: the restricted token does not isolate the network, so the sandbox reaches every address and port, this machine's services included; the port and domain rules are advisory only"
}
