// Package seatbelt runs sandboxed commands on macOS under Seatbelt.
//
// Seatbelt is the kernel sandbox behind sandbox-exec. The profile starts
// from (deny default), reads by fs mode, writes only to the workspace, the
// read-write mounts and a private TMPDIR, allows the network by port rule,
// and denies the secret folders last so that they win.
//
// Profile turns a Spec and the host's facts into the profile text and its
// parameters without touching the system, and Command into the
// sandbox-exec command line; paths reach the profile only as -D
// parameters, never as text. Backend.Probe runs a trial profile and says
// whether a denied write was really denied; Backend.Start runs the
// command (macOS only).
package seatbelt

import (
	"log/slog"

	"github.com/senclaw/sandbox/backends"
)

// Name is the backend's stable name.
const Name = "seatbelt"

// Enforces are the rules a working Seatbelt enforces: the fs mode, writes
// jailed, the network switch, and ports (connect per remote port, listen
// per local port, loopback per port). It has no memory, process count,
// CPU or disk limit.
var Enforces = []string{"fs", "network", "ports"}

// Missing is what a Seatbelt run does not get, in words, for the run's
// record.
func Missing(spec *backends.Spec) []string {
	m := []string{
		"memory, pids, cpu and disk: Seatbelt cannot limit them (only the run's timeout holds)",
		"the sandbox shares this machine's process list and network stack: it has no namespaces",
	}
	switch {
	case len(spec.Ports.Domains) > 0 || len(spec.Ports.DenyDomains) > 0:
		m = append(m, "network: Seatbelt filters by port, not by host; with domain rules nothing dials out directly, and the engine's proxy is not plumbed into Seatbelt sandboxes, so there is no outbound at all")
	case spec.Network || len(spec.Ports.Connect) > 0:
		m = append(m, "network: Seatbelt filters by port, not by host: outbound is allowed to any address on the allowed ports, including private and link-local ones, and names resolve through the system resolver")
	}
	if len(spec.Ports.Listen) > 0 {
		m = append(m, "listen: only a bind to 127.0.0.1 or ::1 is allowed; a server that binds all interfaces is refused")
	}
	return m
}

// Options configure a Backend.
type Options struct {
	// Logger receives probe state changes; nil discards them.
	Logger *slog.Logger
	// Home is the engine user's home, where the secret folders are.
	Home string
	// CacheDir is the user's cache folder (~/Library/Caches).
	CacheDir string
	// TempRoot is where Start makes each run's private TMPDIR (the
	// user's own temporary folder).
	TempRoot string
}

// Backend starts processes under Seatbelt. Create it with New.
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

// Name returns "seatbelt".
func (b *Backend) Name() string { return Name }

// state turns this probe's outcome into a state, logging changes.
func (b *Backend) state(c backends.Capability, healthy bool) backends.Capability {
	return b.history.Record(c, healthy, b.log)
}
