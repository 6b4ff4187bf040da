// Package app is the headless engine of SenClaw Sandbox.
//
// It holds sandboxes, the runner (the single gate every execution passes
// through), the exec policy, settings, capability probing and the store. It
// knows nothing of windows, trays, HTTP or MCP; those faces are clients of
// it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/senclaw/sandbox/app/autorun"
	"github.com/senclaw/sandbox/app/guard"
	"github.com/senclaw/sandbox/app/hostsecrets"
	"github.com/senclaw/sandbox/app/netproxy"
	"github.com/senclaw/sandbox/app/proxyca"
	"github.com/senclaw/sandbox/app/sandboxuid"
	"github.com/senclaw/sandbox/app/secevents"
	"github.com/senclaw/sandbox/app/secrets"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/idmap"
	"github.com/senclaw/sandbox/monitor"
)

// Options configure an Engine. main builds them from flags and the
// environment; the engine reads neither.
type Options struct {
	// DataDir holds the database and the workspaces.
	DataDir string
	// ConfigDir holds the API token and profiles; hidden from sandboxes.
	ConfigDir string
	// RuntimeDir holds the API socket; hidden from sandboxes.
	RuntimeDir string
	// HomeDir is the home of the user the engine serves; its secret
	// folders are hidden from sandboxes and never mounted.
	HomeDir string
	// PasswdFile lists the machine's accounts, whose homes the mount
	// guard and a root engine's open mode protect; "" is /etc/passwd.
	PasswdFile string
	// Backends in order of preference. The first healthy isolating one
	// is used when a sandbox does not name one.
	Backends []backends.Backend
	// Probes are facilities reported with the capabilities that are not
	// backends (Landlock).
	Probes []Prober
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxRuns bounds the run history (default 5000).
	MaxRuns int
	// ProbeTTL is how long a probe result is reused (default 20 s).
	ProbeTTL time.Duration
	// EUID is the engine's effective uid (os.Geteuid()); it decides
	// whether sandboxed code must be dropped to the sandbox user.
	EUID int
	// IDMapCheck says whether an idmapped mount of dir can be made with
	// mapping m (nil: idmap.Check, the real thing); tests simulate a
	// kernel without them.
	IDMapCheck func(dir string, m idmap.Mapping) error
	// SystemPath is the PATH given to sandboxed code.
	SystemPath string
	// ProcessLister reads the process table for the monitor; nil means
	// the host's.
	ProcessLister monitor.Lister
	// SampleInterval is how often processes are sampled (default 1 s).
	SampleInterval time.Duration
	// AheadOneShots is how many one-shot sandboxes of the default
	// configuration the engine keeps set up ahead of their runs (ahead.go);
	// 0 makes none. The daemon keeps DefaultAheadOneShots.
	AheadOneShots int
	// Forwarder is the senclaw-netfwd binary bound into sandboxes: it
	// loads the Unix socket guard of every bwrap sandbox and relays the
	// network (main finds it next to the senclaw executable, else on
	// PATH). Empty: bwrap runs and runs that need network are refused.
	Forwarder string
	// NetResolve and NetTreatAsRemote are test overrides of the egress
	// proxy's resolver and local-address check (see netproxy.Options);
	// nil in production.
	NetResolve       func(ctx context.Context, host string) ([]netip.Addr, error)
	NetTreatAsRemote func(netip.AddrPort) bool
	// System names the account files and the proc file system a root
	// engine learns the ids in use from (zero: this machine's); tests
	// give crafted ones (app/sandboxuid).
	System sandboxuid.System
	// UIDClaims is where root engines claim their sandbox uid ranges on
	// this machine ("": sandboxuid.ClaimsDir).
	UIDClaims string
	// SessionBus is the D-Bus session bus address where the Secret
	// Service is asked to keep secrets ("": none; they are sealed in the
	// store).
	SessionBus string
	// Disks makes the workspaces' filesystem images, the hard disk
	// quota (main gives it the data dir's disks/). Nil, or not usable
	// here (not root, no loop devices): the watchdog counts instead.
	Disks *diskquota.Images
	// DockerOwner is the owner label of the local Docker backend's
	// containers; the named engines' carry it with an id of this
	// engine's own (engines.go). DockerEnv looks up DOCKER_CONFIG for
	// the named engines' Docker contexts (main passes os.Getenv).
	DockerOwner string
	DockerEnv   func(string) string
	// GuardEvents also hears of the shell guard's refusals and warnings
	// (guard.EventDenied, guard.EventWarned), which the engine records
	// as security events of the run's principal whatever this is; nil:
	// no one else hears.
	GuardEvents guard.Reporter
	// TenantHostPolicy, when set (deny, warn or allow), holds over the
	// setting exec.tenantHostPolicy while the engine runs: main gives it
	// SENCLAW_EXEC_TENANT_HOST_POLICY.
	TenantHostPolicy string
}

// Engine owns all state. Create it with New and release it with Close.
type Engine struct {
	opts  Options
	log   *slog.Logger
	store *store.Store
	paths enginePaths
	now   func() time.Time
	// ahead are the one-shot sandboxes made ahead of their runs.
	ahead aheadState
	// ready are the persistent sandboxes' next runs, started ahead.
	ready readyState
	// hostRun are the Space Apps that run in place with no sandbox, by
	// id: their folders (mountguard.go).
	hostRun hostRunApps
	// uids are a root engine's sandbox uids (sandboxuids.go).
	uids   sandboxUIDs
	probes *prober

	// hostWarned is when each principal's host exec on each off path
	// was last recorded under the tenant host policy's warn.
	hostWarnMu sync.Mutex
	hostWarned map[string]time.Time
	// hostUnconfinedSaid: security.exec_fs_confinement_unavailable is
	// recorded once per engine start (hostconfine.go).
	hostUnconfinedSaid bool
	// hostSecrets lists what under /etc others may not read, for the
	// Landlock domain of a host exec (hostconfine.go).
	hostSecretsOnce sync.Once
	hostSecrets     *hostsecrets.Watch

	// guardDirs are the dirs the shell guard protects, found once.
	guardOnce sync.Once
	guardDirs []string

	mu       sync.Mutex // guards settings, policy
	settings Settings
	policy   ExecPolicy
	// agentMu makes finding or creating a project's agent sandbox atomic.
	agentMu sync.Mutex
	// ownerPolicy caches the owner's policy file (policyfiles.go).
	ownerPolicy ownerPolicyState
	// reached hands what the proxy let through to the learn runs going
	// (policylearn.go), as refusals hands what it refused.
	reached refusalLog
	// tenancy is what the engine knows of its tenants (tenancy.go).
	tenancy tenancy
	// placeholders stand for missing agents' and git's directories in
	// the person's folders while runs need them (autorunfiles.go).
	placeholders autorun.Placeholders

	live    *liveRuns
	records *recordWriter
	// security records the security events of every face (secevents).
	security *secevents.Recorder
	sampler  *monitor.Sampler
	// proxy is the egress proxy of every sandbox with network (network.go).
	proxy *netproxy.Proxy
	net   netGuard
	// secrets, ca and uses: the secrets the proxy injects, the CA it looks
	// into TLS with, and the placeholders the runs going now hold
	// (egress.go); refusals hands what the sandboxes are refused to
	// their runs (refusals.go).
	secrets  *secrets.Keeper
	ca       *proxyca.Authority
	uses     secretUses
	refusals refusalLog
	status   statusCache
	// runtimeScan finds the interpreters a switched-off runtime masks.
	runtimeScan backends.RuntimeScan

	// watchdog counts the workspaces without a hard quota. The one-shot
	// workspaces with something mounted over them are kept (path -> true
	// for the engine's tmpfs, which tmpfsOneShots counts; false for what
	// a backend bound there), to be unmounted after the run (quota.go).
	watchdog        *diskquota.Watchdog
	tmpfsOneShots   atomic.Int64
	mountedOneShots sync.Map
	// slots counts the runs in flight; createMu makes counting the
	// sandboxes and storing a new one one step (bounds.go).
	slots    runSlots
	createMu sync.Mutex

	// purges are one-shot workspaces being removed after their runs
	// answered (purgeAfter); Close waits for them.
	purges       sync.WaitGroup
	purgeMu      sync.Mutex
	purgesClosed bool

	// stopBackground ends what Start started.
	stopBackground context.CancelFunc
	closeOnce      sync.Once
	closeErr       error
	// reconciled is closed when Start's reconciliation is done.
	reconciled chan struct{}

	// engines are the settings' named Docker engines (engines.go);
	// install is this engine's id among theirs.
	engines   engineSet
	installMu sync.Mutex
	install   string
}

// New opens the store and returns a ready engine.
func New(opts Options) (*Engine, error) {
	if opts.DataDir == "" {
		return nil, errors.New("no data dir given")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SystemPath == "" {
		opts.SystemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	opts.DataDir = dataDir
	if err := prepareDataDir(dataDir); err != nil {
		return nil, err
	}
	st, err := store.Open(filepath.Join(dataDir, "senclaw.db"), store.Options{MaxRuns: opts.MaxRuns})
	if err != nil {
		if de := (*store.DamagedError)(nil); errors.As(err, &de) {
			return nil, err // "store damaged: ...", as /health says it
		}
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	e := &Engine{
		opts:       opts,
		log:        opts.Logger,
		store:      st,
		paths:      enginePaths{data: dataDir, config: opts.ConfigDir, runtime: opts.RuntimeDir, home: opts.HomeDir, homes: newHostHomes(opts.PasswdFile, opts.HomeDir)},
		now:        opts.Now,
		live:       newLiveRuns(),
		status:     statusCache{m: map[string]statusEntry{}, ttl: 3 * time.Second},
		reconciled: make(chan struct{}),
	}
	e.watchdog = diskquota.NewWatchdog()
	e.secrets = secrets.New(secrets.Options{Store: st, NotFound: store.ErrNotFound, KeyFile: e.secretsKey(), SessionBus: opts.SessionBus,
		Scope: engineScope(dataDir), Now: opts.Now, Logger: opts.Logger})
	e.ca = proxyca.New(e.caDir(), opts.Now)
	e.proxy = netproxy.New(netproxy.Options{
		Rules: e.netRules, Protected: e.protectedPort, ListenTenant: e.listenTenant, CrossTenant: e.crossTenantPort, ProtectedAddr: e.protectedAddr,
		Resolve: opts.NetResolve, TreatAsRemote: opts.NetTreatAsRemote, Logger: opts.Logger,
		OnRefused: e.proxyRefused, OnAllowed: e.proxyAllowed, OnRequest: e.proxyRequested, CA: e.ca, UpstreamRoots: e.pinnedRoots, SecretValue: e.secretValue,
	})
	e.records = newRecordWriter(e)
	e.security = secevents.New(secevents.Options{Store: st, Logger: opts.Logger, Now: opts.Now})
	e.probes = newProber(opts.Backends, opts.ProbeTTL, opts.Now)
	e.probes.extras = opts.Probes
	e.sampler = monitor.New(monitor.Options{Lister: opts.ProcessLister, Now: opts.Now, Interval: opts.SampleInterval, Roots: e.roots,
		Overhead: func(p monitor.Proc) bool { return machinery(p.Command) }, Logger: opts.Logger})
	if err := e.loadConfig(); err != nil {
		e.records.close()
		e.security.Close()
		st.Close()
		return nil, err
	}
	if _, err := e.ownerPolicyFresh(); err != nil {
		// Not fatal: the runs it governs are refused with the reason.
		e.log.Warn("The owner's policy file is broken; runs are refused until it is fixed.", "err", err)
	}
	if err := e.hostRun.load(e.store); err != nil {
		st.Close()
		return nil, fmt.Errorf("reading the Space Apps: %w", err)
	}
	if err := e.reconcileRuns(); err != nil {
		e.records.close()
		e.security.Close()
		st.Close()
		return nil, fmt.Errorf("reconciling runs: %w", err)
	}
	e.sweepPlaceholders()
	if err := e.reconcileDisks(); err != nil {
		// A workspace whose image did not mount again is an empty
		// directory until it does: say so, and go on.
		e.log.Error("Workspace images could not all be reconciled.", "err", err)
	}
	if err := e.setupUIDs(); err != nil {
		e.records.close()
		st.Close()
		return nil, err
	}
	e.reapAhead()
	e.purgeOneShots()
	e.ahead.want = opts.AheadOneShots
	go e.fillAhead()
	return e, nil
}

// DefaultAheadOneShots is how many one-shot sandboxes the daemon keeps
// made ahead (Options.AheadOneShots): two, so that one is there while the one
// after it is made.
const DefaultAheadOneShots = 2

// prepareDataDir creates the data dir and its workspaces dir. Both are
// 0711: not listable by anyone else, but traversable, because a root
// engine runs sandboxed code as an unprivileged user whose workspace lies
// below them. The database itself is 0600.
func prepareDataDir(dir string) error {
	for _, d := range []string{dir, filepath.Join(dir, "workspaces")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", d, err)
		}
	}
	return nil
}

// Close stops every live run, releases what the backends hold (the warm
// container pool) and closes the store. It is safe to call more than once.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		if e.stopBackground != nil {
			e.stopBackground()
		}
		e.closeAhead()
		e.closeReady()
		e.hostSecretsOnce.Do(func() {}) // none is made after
		if e.hostSecrets != nil {
			e.hostSecrets.Close()
		}
		e.live.killAll()
		e.live.wait(5 * time.Second)
		e.purgeMu.Lock()
		e.purgesClosed = true
		e.purgeMu.Unlock()
		e.purges.Wait()
		e.records.close()
		e.security.Close()
		e.closeBackends()
		e.closeEngines()
		e.proxy.Close()
		e.watchdog.Close()
		if e.opts.Disks != nil {
			if err := e.opts.Disks.DetachAll(); err != nil {
				e.log.Warn("Workspace images could not all be unmounted.", "err", err)
			}
		}
		e.closeErr = e.store.Close()
		e.uids.claim.Release()
	})
	return e.closeErr
}

// Security is the recorder of security events, which every face and
// capability of the engine records its refusals with.
func (e *Engine) Security() *secevents.Recorder { return e.security }

// TokenDocs and TenantDocs are the store's documents of the tokens and
// the tenants, which app/tokens and app/tenants own the shape of.
func (e *Engine) TokenDocs() store.Docs  { return e.store.Tokens() }
func (e *Engine) TenantDocs() store.Docs { return e.store.Tenants() }

// DataDir is where the database and workspaces live.
func (e *Engine) DataDir() string { return e.opts.DataDir }

// HomeDir is the home of the user the engine serves.
func (e *Engine) HomeDir() string { return e.opts.HomeDir }

func (e *Engine) workspacesDir() string { return filepath.Join(e.opts.DataDir, "workspaces") }

// loadConfig reads settings and policy into memory. A setting that was
// never saved takes its default; one that cannot be read is an error, so a
// broken store never silently means "switches off".
func (e *Engine) loadConfig() error {
	s := DefaultSettings()
	if err := e.store.GetSetting("app", &s); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("reading settings: %w", err)
	}
	// Settings saved before the run queue bound all runs in flight with
	// maxRuns; the background runs keep that bound, the foreground ones
	// get the concurrency and the queue.
	var old struct {
		MaxRuns           *int `json:"maxRuns"`
		MaxBackgroundRuns *int `json:"maxBackgroundRuns"`
	}
	if e.store.GetSetting("app", &old) == nil && old.MaxRuns != nil && old.MaxBackgroundRuns == nil {
		s.MaxBackgroundRuns = min(max(*old.MaxRuns, 1), MaxBackgroundRunsLimit)
	}
	p := DefaultExecPolicy()
	if err := e.store.GetSetting("exec_policy", &p); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("reading the exec policy: %w", err)
	}
	e.mu.Lock()
	e.settings, e.policy = s, p
	e.mu.Unlock()
	e.applyPoolSize(s.DockerPoolSize)
	e.applyEngines(s.Engines)
	return nil
}

// Settings returns the current settings.
func (e *Engine) Settings() Settings {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.settings
	s.Allowlist = append([]string{}, s.Allowlist...)
	s.MountAllow = append([]string{}, s.MountAllow...)
	s.AllowedSockets = append([]string{}, s.AllowedSockets...)
	s.PinnedCAs = maps.Clone(s.PinnedCAs)
	if s.PinnedCAs == nil {
		s.PinnedCAs = map[string]string{}
	}
	s.Engines = append([]EngineSettings{}, s.Engines...)
	s.Exec.EnvOverride = e.opts.TenantHostPolicy
	return s
}

// Policy returns the current exec policy.
func (e *Engine) Policy() ExecPolicy {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.policy
	p.ExecLoopback = append([]int{}, p.ExecLoopback...)
	return p
}

// Capabilities probes every backend (reusing recent results unless
// refresh) and says whether this machine can isolate.
func (e *Engine) Capabilities(ctx context.Context, refresh bool) Capabilities {
	caps := e.probes.all(ctx, refresh)
	caps.Engines = e.engineInfos(ctx, caps, refresh)
	return caps
}
