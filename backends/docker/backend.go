// Package docker runs sandboxed commands in Docker containers through the
// daemon's HTTP API.
//
// It uses the official Go client, with API version negotiation, never the
// docker CLI. It works with Debian's 20.10 daemon as well as with current
// Docker Engine and Docker Desktop.
//
// A persistent sandbox is one long-lived, hardened container named
// senclaw-<sandboxID> that runs an idle keeper process; each run is an exec
// into it. One-shot runs take a pre-created container from a warm pool.
// Containers carry labels (senclaw.sandbox, senclaw.config-hash,
// senclaw.created, senclaw.kind) so that drift, reconciliation after a
// restart and pruning work from the daemon's own state.
//
// Besides backends.Backend and backends.Persistent, Backend offers optional
// extras the engine discovers by type assertion: Inspector (stats, process
// list, killing processes), Pruner (idle/age pruning), Warmer (pre-filling
// the one-shot pool) and io.Closer (removing the pool at engine stop).
package docker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
)

// Options configures the backend. main fills it; the backend reads no
// environment variables of its own.
type Options struct {
	// Getenv looks up the engine's environment for DOCKER_HOST,
	// DOCKER_CONTEXT, DOCKER_CONFIG, DOCKER_CERT_PATH, DOCKER_TLS_VERIFY and
	// DOCKER_API_VERSION. Nil means none is set. main passes os.Getenv.
	Getenv func(key string) string
	// HomeDir is the engine user's home, where ~/.docker/config.json and
	// the context store live (unless DOCKER_CONFIG says otherwise).
	HomeDir string
	// Host, when set, overrides every other way of finding the daemon
	// (e.g. "unix:///run/user/1000/docker.sock"); tests use it.
	Host string
	// Remote, when set, makes this backend one of the settings' named
	// engines, a Docker engine on another machine (remote.go), found by
	// it alone (Host and the environment do not apply).
	Remote *Remote
	// Forwarder is this machine's senclaw-netfwd. A daemon elsewhere gets
	// it copied into each container, where it relays the network and
	// serves the file API; without it such containers are refused.
	Forwarder string

	// Owner tells this engine's containers from those of other engines on
	// the same daemon (other users, test engines): Reconcile and Prune
	// touch only containers labelled with it. main derives it from the
	// data dir; empty means "uid<N>" of the engine's user.
	Owner string

	// DefaultImage is the image of sandboxes that name none.
	DefaultImage string
	// User runs sandboxed code when a Spec names no user. Nil means the
	// engine's own uid when it is not root, else 65534:65534 (nobody).
	User *backends.Credential

	// PoolSize is how many idle containers are kept ready per one-shot
	// configuration: 0 means 2, a negative value turns the pool off.
	PoolSize int
	// PoolDir holds the workspaces of pooled containers. It must be on
	// the same filesystem as the engine's workspaces (a pooled workspace
	// is renamed into place). Empty turns the pool off.
	PoolDir string
	// HardQuota makes each pooled workspace a tmpfs of the one-shot's
	// disk quota (root only), bound over the run's workspace when a run
	// takes it, as the engine gives its own one-shot workspaces.
	HardQuota bool

	// IdleHours stops a sandbox container idle this long (0 means 24).
	IdleHours int
	// MaxAgeDays removes a sandbox container idle this long (0 means 7).
	MaxAgeDays int
	// Now is the clock (nil means time.Now); tests inject one.
	Now func() time.Time
	// Logger receives state changes (nil discards them, as every
	// component's does: the caller says where logs go).
	Logger *slog.Logger

	// inContainerKill forces the remote-daemon way of killing runs
	// (an exec of kill inside the container); tests set it.
	inContainerKill bool
}

// Backend is the Docker backend. It is safe for concurrent use.
type Backend struct {
	opts Options
	log  *slog.Logger

	clientOnce sync.Once
	cli        *apiClient
	ep         endpoint
	cliErr     error

	mu        sync.Mutex
	probe     probeMemory
	sandboxes map[string]*sandboxState

	pool *pool
	// scans remembers the images' interpreters (masks.go).
	scans imageScans
	// sweeps holds a *sync.Mutex per container: its sweeps inside run
	// one at a time (kill.go).
	sweeps sync.Map
	// started is when New ran: containers labelled as created before it
	// belong to an earlier engine.
	started time.Time
	// startedWall is the same moment on the wall clock, for file times.
	startedWall time.Time
	// idleUser is who a pooled container's own process runs as until a
	// run takes it (SetTrialUser); each run's command runs as its own
	// sandbox's user (an exec's user).
	idleUser atomic.Pointer[backends.Credential]

	// For a daemon elsewhere (remote.go): the forwarder's digest, the
	// daemon's os/arch (from the probe), the relays (relay.go).
	forwarderState
	daemonPlatform string
	relays         relays
	// disks is what each workspace volume's labels say of its quota,
	// by sandbox id (diskLabel).
	disks sync.Map
}

var (
	_ backends.Backend    = (*Backend)(nil)
	_ backends.Persistent = (*Backend)(nil)
	_ Inspector           = (*Backend)(nil)
	_ Pruner              = (*Backend)(nil)
	_ Warmer              = (*Backend)(nil)
	_ backends.PoolSizer  = (*Backend)(nil)

	_ backends.TrialUserSetter = (*Backend)(nil)
)

// SetTrialUser sets who pooled containers run as while they wait: a root
// engine's uid that no sandbox has.
func (b *Backend) SetTrialUser(u *backends.Credential) { b.idleUser.Store(u) }

// New returns a Docker backend. It does not contact the daemon; Probe does.
func New(opts Options) *Backend {
	if opts.PoolSize == 0 {
		opts.PoolSize = 2
	}
	if opts.IdleHours <= 0 {
		opts.IdleHours = 24
	}
	if opts.MaxAgeDays <= 0 {
		opts.MaxAgeDays = 7
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Owner == "" {
		opts.Owner = fmt.Sprintf("uid%d", os.Getuid())
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	b := &Backend{opts: opts, log: opts.Logger, sandboxes: map[string]*sandboxState{}, started: opts.Now(), startedWall: time.Now()}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.pool = newPool(b)
	return b
}

// Name is "docker".
func (*Backend) Name() string { return "docker" }

// Close removes the warm pool's containers and waits for pending removals
// of one-shot containers. Sandbox containers stay; Reconcile adopts them at
// the next start.
func (b *Backend) Close() error {
	err := b.pool.close()
	if b.cli != nil {
		_ = b.cli.Close()
	}
	return err
}

// client returns the API client, made once from the resolved endpoint.
func (b *Backend) client() (*apiClient, error) {
	b.clientOnce.Do(func() {
		b.ep, b.cliErr = resolveEndpoint(b.opts)
		if b.cliErr != nil {
			return
		}
		b.cli, b.cliErr = newAPIClient(b.ep)
		if b.cliErr != nil {
			b.cliErr = fmt.Errorf("making a docker client for %s: %w", b.ep.Host, b.cliErr)
		}
	})
	return b.cli, b.cliErr
}

// clientFor returns the API client for a call about sandboxID's
// container, once the id is known to be a name's tail: the client cleans
// a path's . and .. segments before it sends it, so an id with a / could
// name another object of the daemon ("x/../ID" is the container ID).
func (b *Backend) clientFor(sandboxID string) (*apiClient, error) {
	if !plainName(sandboxID) {
		return nil, fmt.Errorf("refused: the sandbox id %q cannot be part of a container name (letters, digits, '_', '.' and '-' only)", sandboxID)
	}
	return b.client()
}

// plainName reports whether s may follow "senclaw-" in a container name.
func plainName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// Timeouts of daemon calls. Every call runs under one of them; a run's own
// stream is bounded by the engine, which kills it at its timeout.
const (
	probeTimeout  = 2 * time.Second
	callTimeout   = 30 * time.Second
	createTimeout = 2 * time.Minute
	stopGrace     = 2 // seconds between SIGTERM and SIGKILL on stop
)

// stopGently stops a container with its stop signal, then SIGKILL after
// stopGrace seconds.
var stopGently = client.ContainerStopOptions{Timeout: new(stopGrace)}

// callCtx bounds one daemon call.
func callCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

func (b *Backend) now() time.Time { return b.opts.Now() }
