package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker/engineapi"
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
	if _, err := cli.Ping(ctx); err != nil {
		return b.remember(c, false, b.unreachable(err).Error())
	}
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		return b.remember(c, false, b.unreachable(err).Error())
	}
	c.Version = v.Version
	c.Details["daemon"] = "answering"
	c.Details["api"] = cli.ClientVersion()
	if api := cli.ClientVersion(); engineapi.VersionLess(api, MinAPIVersion) {
		// An older daemon drops what it does not know without a word: the
		// container would run without its own cgroup namespace (1.41),
		// and, below 1.25, without its mounts and init.
		return b.remember(c, false, fmt.Sprintf("Docker %s at %s speaks API %s, older than the %s senclaw needs to apply every part of a sandbox (an older daemon ignores what it does not know); upgrade Docker to 20.10 or later, or unset DOCKER_API_VERSION if it pins an older version", v.Version, b.ep.Host, api, MinAPIVersion))
	}
	c.Details["os"] = v.Os + "/" + v.Arch
	c.Details["seccomp"] = "docker default profile + senclaw denials"
	c.Enforces = []string{"fs", "network", "ports", "memory", "pids", "cpu", "disk", "seccomp"}
	return b.remember(c, true, fmt.Sprintf("Docker %s answers at %s (API %s)", v.Version, b.ep.Host, cli.ClientVersion()))
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
		if b.ep.Configured || b.installed() {
			c.Details["daemon"] = notAnswering
		} else {
			c.Details["daemon"] = "not found"
		}
	}
	c.Reason = why
	if c.State != b.probe.lastState || (!ok && why != b.probe.lastWhy) {
		b.log.Info("The docker backend changed state.", "state", c.State, "reason", why)
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
	// Installed is true when a client, context or socket exists, so the
	// daemon is "not answering" rather than absent.
	Installed bool
	Err       error
}

// Error says what failed and how to get the daemon answering.
func (e *DaemonError) Error() string {
	if e.Installed {
		return fmt.Sprintf("the docker daemon at %s is %s (%v); start it (systemctl start docker, or open Docker Desktop) and try again", e.Host, notAnswering, e.Err)
	}
	return fmt.Sprintf("no docker daemon found at %s (%v); install Docker (apt-get install docker.io, or Docker Desktop) or set DOCKER_HOST", e.Host, e.Err)
}

// Unwrap returns the client's error.
func (e *DaemonError) Unwrap() error { return e.Err }

// unreachable turns a failed call into a DaemonError when the daemon did
// not answer at all (refused, no socket, or silent past the deadline).
func (b *Backend) unreachable(err error) error {
	var de *DaemonError
	if errors.As(err, &de) {
		return err
	}
	var ce *engineapi.ConnectError
	var op *net.OpError
	dial := errors.As(err, &op) && op.Op == "dial"
	if !errors.As(err, &ce) && !dial && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &DaemonError{Host: b.ep.Host, Installed: b.ep.Configured || b.installed(), Err: err}
}

// daemonErr wraps err from a daemon call with what was being done.
func (b *Backend) daemonErr(doing string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", doing, b.unreachable(err))
}
