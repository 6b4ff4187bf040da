// Package docker runs sandboxed commands in Docker containers through the
// daemon's HTTP API (engineapi, with API version negotiation), never through the docker CLI. It works with Debian's 20.10
// daemon as well as with current Docker Engine and Docker Desktop.
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
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker/engineapi"
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
	// Logger receives state changes (nil means slog.Default()).
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
	cli        *engineapi.Client
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
}

var (
	_ backends.Backend    = (*Backend)(nil)
	_ backends.Persistent = (*Backend)(nil)
	_ Inspector           = (*Backend)(nil)
	_ Pruner              = (*Backend)(nil)
	_ Warmer              = (*Backend)(nil)
	_ backends.PoolSizer  = (*Backend)(nil)
)

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
		b.log = slog.Default()
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
func (b *Backend) client() (*engineapi.Client, error) {
	b.clientOnce.Do(func() {
		b.ep, b.cliErr = resolveEndpoint(b.opts)
		if b.cliErr != nil {
			return
		}
		b.cli, b.cliErr = b.ep.newClient()
		if b.cliErr != nil {
			b.cliErr = fmt.Errorf("making a docker client for %s: %w", b.ep.Host, b.cliErr)
		}
	})
	return b.cli, b.cliErr
}

// Timeouts of daemon calls. Every call runs under one of them; a run's own
// stream is bounded by the engine, which kills it at its timeout.
const (
	probeTimeout  = 2 * time.Second
	callTimeout   = 30 * time.Second
	createTimeout = 2 * time.Minute
	stopGrace     = 2 // seconds between SIGTERM and SIGKILL on stop
)

// callCtx bounds one daemon call.
func callCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

func (b *Backend) now() time.Time { return b.opts.Now() }
