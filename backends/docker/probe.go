package docker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"

	"github.com/senclaw/sandbox/backends"
)

// probeMemory is what the backend remembers between probes, to tell "never
// seen" from "seen and gone" and to log only on change.
type probeMemory struct {
	seen      bool
	lastState backends.ProbeState
	lastWhy   string
}

// notAnswering is the Details["daemon"] value (and the start of the reason)
// when a client or socket exists but the daemon does not answer, as with
// Docker Desktop installed but stopped.
const notAnswering = "not answering"

// MinAPIVersion is the oldest Engine API the backend uses: 1.41 (Docker
// 20.10) is the first to apply CgroupnsMode.
const MinAPIVersion = "1.41"

// Probe asks the daemon (ping and version) within 2 seconds, and finds it
// unfit when its API is older than MinAPIVersion.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	ctx, cancel := callCtx(ctx, probeTimeout)
	defer cancel()
	c := backends.Capability{
		Backend:   "docker",
		Isolates:  true,
		Enforces:  []string{},
		Details:   map[string]string{},
		CheckedAt: b.now(),
	}
	cli, err := b.client()
	if err != nil {
		return b.remember(c, false, err.Error())
	}
	c.Details["host"] = b.ep.Host
	c.Details["from"] = b.ep.Source
	if b.opts.Remote == nil && b.ep.elsewhere() {
		// Its sandboxes' workspaces are this machine's folders, which
		// the daemon there cannot bind.
		return b.remember(c, false, fmt.Sprintf("the docker daemon at %s (from %s) is on another machine, where this machine's folders cannot be bound into the local engine's sandboxes; add it to the settings as a named engine (engines: name, host, caCert, cert, key) and create sandboxes on it with --engine NAME", b.ep.Host, b.ep.Source))
	}
	ping, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		if ping.APIVersion != "" && versions.LessThan(ping.APIVersion, MinAPIVersion) {
			// The client refuses to speak below its own minimum.
			return b.remember(c, false, b.tooOld("", ping.APIVersion))
		}
		err = b.unreachable(err)
		if de := (*DaemonError)(nil); errors.As(err, &de) && de.Denied {
			c.Details["daemon"] = "refuses this user"
		}
		return b.remember(c, false, err.Error())
	}
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return b.remember(c, false, b.unreachable(err).Error())
	}
	c.Version = v.Version
	c.Details["daemon"] = "answering"
	c.Details["api"] = cli.ClientVersion()
	if api := cli.ClientVersion(); versions.LessThan(api, MinAPIVersion) {
		return b.remember(c, false, b.tooOld(v.Version, api))
	}
	c.Details["os"] = v.Os + "/" + v.Arch
	b.mu.Lock()
	b.daemonPlatform = v.Os + "/" + v.Arch
	b.mu.Unlock()
	if info, err := cli.Info(ctx, client.InfoOptions{}); err == nil {
		// What the engine has to give: shown on the capability card.
		c.Details["cpus"] = strconv.Itoa(info.Info.NCPU)
		c.Details["memoryBytes"] = strconv.FormatInt(info.Info.MemTotal, 10)
	}
	c.Details["engine"] = b.EngineName()
	if b.Elsewhere() {
		c.Details["elsewhere"] = "true"
	}
	c.Details["seccomp"] = "docker default profile + senclaw denials"
	c.Enforces = []string{"fs", "network", "ports", "memory", "pids", "cpu", "disk", "seccomp"}
	if b.opts.Remote != nil {
		return b.remember(c, true, fmt.Sprintf("Docker %s answers at %s (API %s), engine %s on another machine: workspaces are volumes there, egress goes through this machine's proxy", v.Version, b.ep.Host, cli.ClientVersion(), b.opts.Remote.Name))
	}
	return b.remember(c, true, fmt.Sprintf("Docker %s answers at %s (API %s)", v.Version, b.ep.Host, cli.ClientVersion()))
}

// tooOld refuses a daemon (of version, when known) that speaks API api,
// older than MinAPIVersion. An older daemon drops what it does not know
// without a word: the container would run without its own cgroup
// namespace (1.41), and, below 1.25, without its mounts and init.
func (b *Backend) tooOld(version, api string) string {
	docker := "Docker"
	if version != "" {
		docker += " " + version
	}
	return fmt.Sprintf("%s at %s speaks API %s, older than the %s senclaw needs to apply every part of a sandbox (an older daemon ignores what it does not know); upgrade Docker to 20.10 or later, or unset DOCKER_API_VERSION if it pins an older version", docker, b.ep.Host, api, MinAPIVersion)
}

// remember sets the state from this probe and the ones before it, and logs
// when it changes.
func (b *Backend) remember(c backends.Capability, ok bool, why string) backends.Capability {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case ok:
		c.State = backends.Healthy
		b.probe.seen = true
	case b.probe.seen:
		c.State = backends.SeenGone
	default:
		c.State = backends.NeverSeen
	}
	if !ok {
		c.Enforces = []string{}
		switch {
		case c.Details["daemon"] != "": // Probe said more: it refuses this user
		case b.ep.Configured || b.installed():
			c.Details["daemon"] = notAnswering
		default:
			c.Details["daemon"] = "not found"
		}
	}
	c.Reason = why
	if c.State != b.probe.lastState || (!ok && why != b.probe.lastWhy) {
		b.log.Info("The docker backend changed state.", "engine", b.EngineName(), "state", c.State, "reason", why)
	}
	b.probe.lastState, b.probe.lastWhy = c.State, why
	return c
}

// installed reports whether Docker looks installed though it may not run:
// its socket file or the user's docker config directory exists.
func (b *Backend) installed() bool {
	if p := b.ep.socketPath(); p != "" {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	if b.opts.HomeDir != "" {
		if _, err := os.Stat(filepath.Join(b.opts.HomeDir, ".docker")); err == nil {
			return true
		}
	}
	return false
}

// DaemonError says the daemon could not be reached. Callers branch on it
// with errors.As: nothing ran.
type DaemonError struct {
	Host string
	// Engine names a named engine of the settings ("" for the local one).
	Engine string
	// Installed is true when a client, context or socket exists, so the
	// daemon is "not answering" rather than absent.
	Installed bool
	// Denied is true when the daemon's socket is not this user's to open
	// (permission denied): the daemon may run, for root and its group.
	Denied bool
	Err    error
}

// Error says what failed and how to get the daemon answering.
func (e *DaemonError) Error() string {
	if e.Denied {
		// Starting the daemon would not help: this user may not reach it.
		name := "$USER"
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		return fmt.Sprintf("the docker daemon at %s refuses %s (permission denied on its socket, which is root's and the docker group's); "+
			"to use Docker, add the user to the docker group (sudo usermod -aG docker %s, then log in again; the group can do anything root can), "+
			"or leave Docker out: bwrap and Landlock need no group", e.Host, name, name)
	}
	if e.Engine != "" {
		return fmt.Sprintf("engine %s (the docker daemon at %s) is %s (%v); its sandboxes are unreachable until it answers again: check that machine and the network to it", e.Engine, e.Host, notAnswering, e.Err)
	}
	if e.Installed {
		return fmt.Sprintf("the docker daemon at %s is %s (%v); start it (systemctl start docker, or open Docker Desktop) and try again", e.Host, notAnswering, e.Err)
	}
	return fmt.Sprintf("no docker daemon found at %s (%v); install Docker (apt-get install docker.io, or Docker Desktop) or set DOCKER_HOST", e.Host, e.Err)
}

// Unwrap returns the client's error.
func (e *DaemonError) Unwrap() error { return e.Err }

// unreachable turns a failed call into a DaemonError when the daemon did
// not answer at all (refused, no socket, or silent past the deadline). A
// daemon that answered with a redirect or a certificate this side refuses
// (or that refused ours) did answer: the client's "error during connect"
// says so, as it is.
func (b *Backend) unreachable(err error) error {
	var de *DaemonError
	var cert *tls.CertificateVerificationError
	var alert tls.AlertError
	if errors.As(err, &de) || errors.As(err, &cert) || errors.As(err, &alert) || errors.Is(err, client.ErrRedirect) {
		return err
	}
	var op *net.OpError
	dial := errors.As(err, &op) && op.Op == "dial"
	if !client.IsErrConnectionFailed(err) && !dial && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// The client keeps no os.ErrPermission in what it returns, only
	// its words. (Another machine's engine refusing is not this user's
	// group to join.)
	denied := b.opts.Remote == nil && (errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "permission denied"))
	de = &DaemonError{Host: b.ep.Host, Installed: b.ep.Configured || b.installed(), Denied: denied, Err: err}
	if b.opts.Remote != nil {
		de.Engine = b.opts.Remote.Name
	}
	return de
}

// daemonErr wraps err from a daemon call with what was being done.
func (b *Backend) daemonErr(doing string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", doing, b.unreachable(err))
}
