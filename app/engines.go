package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker"
)

// Docker engines: the local one (the "docker" backend, found by the
// environment's DOCKER_HOST or Docker context) and the named ones of the
// settings, each a Docker engine on another machine reached by a Docker
// context or by its host and TLS material. A sandbox is made on one of
// them (Sandbox.Engine; "" is the local one) and stays there; its policy,
// proxy, records and faces stay on this machine. Each named engine is a
// docker backend of its own (docker.Options.Remote): nothing of this
// machine is bound into its containers. A watcher per named engine sees
// it come and go: its sandboxes show "unreachable" while it is gone (and
// runs there are refused with the reason), and are adopted again when it
// answers (reconcile, then pruning, per engine).

// LocalEngine is the name of the engine of this machine's environment.
const LocalEngine = "local"

// MaxEngines bounds the named engines of the settings.
const MaxEngines = 32

var engineName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`) })

// checkEngines validates the settings' engines: names, one way to reach
// each, TLS that is verified, files that exist. An engine that sandboxes
// live on may not be removed.
func (e *Engine) checkEngines(list []EngineSettings) ([]EngineSettings, error) {
	if len(list) > MaxEngines {
		return nil, badField("engines", len(list), "are too many: at most %d", MaxEngines)
	}
	out := make([]EngineSettings, 0, len(list))
	seen := map[string]bool{}
	for i, en := range list {
		f := func(name string) string { return fmt.Sprintf("engines[%d].%s", i, name) }
		en.Name = strings.TrimSpace(en.Name)
		switch {
		case !engineName().MatchString(en.Name):
			return nil, badField(f("name"), en.Name, "must be 1 to 32 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit")
		case en.Name == LocalEngine:
			return nil, badField(f("name"), en.Name, "is the engine of this machine's environment; give the other engine another name")
		case seen[en.Name]:
			return nil, badField(f("name"), en.Name, "is given twice")
		}
		seen[en.Name] = true
		for field, v := range map[string]string{"context": en.Context, "host": en.Host, "caCert": en.CACert, "cert": en.Cert, "key": en.Key} {
			if err := checkText(f(field), v); err != nil {
				return nil, err
			}
		}
		if (en.Context == "") == (en.Host == "") {
			return nil, badField(f("host"), en.Host, "give either a Docker context (context) or a host (host), not both or neither")
		}
		if en.Context != "" && (en.CACert != "" || en.Cert != "" || en.Key != "") {
			return nil, badField(f("context"), en.Context, "a Docker context brings its own TLS material; drop caCert, cert and key")
		}
		if en.Host != "" {
			u, err := url.Parse(en.Host)
			switch {
			case err != nil || u.Scheme == "":
				return nil, badField(f("host"), en.Host, "is not a URL such as tcp://build-box:2376 or unix:///run/remote-docker.sock")
			case u.Scheme == "ssh":
				return nil, badField(f("host"), en.Host, "uses ssh, which SenClaw does not support yet: forward the remote socket (ssh -NL /run/user/$UID/big.sock:/var/run/docker.sock HOST) and give unix:///run/user/$UID/big.sock, or give tcp:// with TLS")
			case u.Scheme == "tcp" && en.CACert == "":
				return nil, badField(f("caCert"), en.CACert, "is needed for a tcp:// engine: the Docker API over TCP without TLS, or with TLS nothing verifies, gives root on that machine to whoever reaches it; give the CA that signed the daemon's certificate, and the client's cert and key (the daemon's --tlsverify)")
			case u.Scheme != "tcp" && u.Scheme != "unix":
				return nil, badField(f("host"), en.Host, "uses %s; give tcp:// (with TLS) or unix://", u.Scheme)
			}
			if (en.Cert == "") != (en.Key == "") {
				return nil, badField(f("cert"), en.Cert, "and key go together: give both, or neither")
			}
			for field, p := range map[string]string{"caCert": en.CACert, "cert": en.Cert, "key": en.Key} {
				if p == "" {
					continue
				}
				if !filepath.IsAbs(p) {
					return nil, badField(f(field), p, "must be an absolute path on this machine")
				}
				if _, err := os.Stat(p); err != nil {
					return nil, badField(f(field), p, "cannot be read: %v", err)
				}
			}
		}
		probe := e.newEngineBackend(en)
		err := probe.CheckEndpoint()
		_ = probe.Close()
		if err != nil {
			if en.Context != "" {
				return nil, badField(f("context"), en.Context, "%v", err)
			}
			return nil, badField(f("host"), en.Host, "%v", err)
		}
		out = append(out, en)
	}
	// An engine sandboxes live on stays: its sandboxes would lose their
	// place (their files are on it).
	for _, old := range e.Settings().Engines {
		if seen[old.Name] {
			continue
		}
		if ids := e.sandboxesOn(old.Name); len(ids) > 0 {
			return nil, badField("engines", old.Name, "cannot be removed while sandboxes live on it (%s); delete them first", strings.Join(ids, ", "))
		}
	}
	return out, nil
}

// sandboxesOn lists the ids of the sandboxes on engine name.
func (e *Engine) sandboxesOn(name string) []string {
	var ids []string
	_ = e.store.EachSandbox(func(data []byte) error {
		var s struct {
			ID     string `json:"id"`
			Engine string `json:"engine"`
		}
		if json.Unmarshal(data, &s) == nil && s.Engine == name {
			ids = append(ids, s.ID)
		}
		return nil
	})
	return ids
}

// engineSet holds the named engines' backends.
type engineSet struct {
	mu    sync.Mutex
	named map[string]*namedEngine
	// ctx is the engine's background context once Start ran: watchers
	// of engines added later start with it.
	ctx context.Context
}

type namedEngine struct {
	cfg  EngineSettings
	b    *docker.Backend
	stop context.CancelFunc
	// seen is the state the watcher saw last.
	mu   sync.Mutex
	seen backends.ProbeState
}

// enginePrefix names a named engine's probe in the prober's cache.
const enginePrefix = "engine:"

// Name is the engine's probe's name.
func (n *namedEngine) Name() string { return enginePrefix + n.cfg.Name }

// Probe probes the engine's daemon.
func (n *namedEngine) Probe(ctx context.Context) backends.Capability { return n.b.Probe(ctx) }

// newEngineBackend builds the docker backend of a named engine.
func (e *Engine) newEngineBackend(en EngineSettings) *docker.Backend {
	getenv := e.opts.DockerEnv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return docker.New(docker.Options{
		Getenv:       getenv,
		HomeDir:      e.opts.HomeDir,
		Remote:       &docker.Remote{Name: en.Name, Context: en.Context, Host: en.Host, CACert: en.CACert, Cert: en.Cert, Key: en.Key},
		Forwarder:    e.opts.Forwarder,
		Owner:        e.remoteOwner(),
		DefaultImage: e.Settings().DefaultImage,
		PoolSize:     -1,
		Now:          e.opts.Now,
		Logger:       e.log,
	})
}

// remoteOwner labels this engine's containers and volumes on the named
// engines: the local owner label (user, data dir) and an id made once
// for this engine, since a shared machine's daemon serves the engines of
// many machines, whose users and data dirs may be alike.
func (e *Engine) remoteOwner() string {
	base := e.opts.DockerOwner
	if base == "" {
		base = "uid" + strconv.Itoa(os.Getuid())
	}
	return base + "-" + e.installID()
}

// installID is an id made once per engine (its data dir), kept in the
// store.
func (e *Engine) installID() string {
	e.installMu.Lock()
	defer e.installMu.Unlock()
	if e.install != "" {
		return e.install
	}
	var id string
	if err := e.store.GetSetting("install_id", &id); err != nil || id == "" {
		id = randomHex(6)
		if err := e.store.PutSetting("install_id", id); err != nil {
			e.log.Warn("The engine's id could not be saved; containers elsewhere carry a new one each start.", "err", err)
		}
	}
	e.install = id
	return id
}

// applyEngines makes the named engines' backends match the settings:
// new engines get one (and a watcher once Start ran), removed ones are
// closed, changed ones replaced.
func (e *Engine) applyEngines(list []EngineSettings) {
	es := &e.engines
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.named == nil {
		es.named = map[string]*namedEngine{}
	}
	keep := map[string]bool{}
	for _, en := range list {
		keep[en.Name] = true
		if old := es.named[en.Name]; old != nil {
			if old.cfg == en {
				continue
			}
			e.closeEngine(old)
		}
		n := &namedEngine{cfg: en, b: e.newEngineBackend(en)}
		es.named[en.Name] = n
		e.probes.forget(n.Name())
		if es.ctx != nil {
			e.watchEngine(es.ctx, n)
		}
	}
	for name, n := range es.named {
		if !keep[name] {
			e.closeEngine(n)
			delete(es.named, name)
		}
	}
}

func (e *Engine) closeEngine(n *namedEngine) {
	if n.stop != nil {
		n.stop()
	}
	e.probes.forget(n.Name())
	if err := n.b.Close(); err != nil {
		e.log.Warn("Closing an engine failed.", "engine", n.cfg.Name, "err", err)
	}
}

// namedEngine returns the named engine name, or nil.
func (e *Engine) namedEngine(name string) *namedEngine {
	e.engines.mu.Lock()
	defer e.engines.mu.Unlock()
	return e.engines.named[name]
}

// engineNames lists the engines a sandbox may name.
func (e *Engine) engineNames() []string {
	names := []string{LocalEngine}
	for _, en := range e.Settings().Engines {
		names = append(names, en.Name)
	}
	return names
}

// backendOf is the backend sb's runs go to: its named engine's for a
// sandbox on one, else its own backend (nil: none, or "auto").
func (e *Engine) backendOf(sb *Sandbox) backends.Backend {
	if sb.Engine != "" {
		if n := e.namedEngine(sb.Engine); n != nil {
			return n.b
		}
		return nil
	}
	if sb.Backend == "" {
		return nil
	}
	return e.probes.find(sb.Backend)
}

// elsewhere returns the docker backend of sb when its files live on
// another machine (a named engine, or a local engine whose daemon is
// elsewhere), else nil.
func (e *Engine) elsewhere(sb *Sandbox) *docker.Backend {
	if sb.Backend != "docker" {
		return nil
	}
	if b, ok := e.backendOf(sb).(*docker.Backend); ok && b.Elsewhere() {
		return b
	}
	return nil
}

// remoteSandbox reports whether sb's files live on another machine.
func remoteSandbox(sb *Sandbox) bool { return sb.Engine != "" }

// engineCap is sb's engine's capability, probed when none is cached.
func (e *Engine) engineCap(ctx context.Context, n *namedEngine) backends.Capability {
	c := e.probes.probe(ctx, n, false)
	c.Backend = "docker"
	return c
}

// engineUnreachable says why sb's named engine cannot be reached now
// ("" when it can, or when nothing is known yet), from the prober's
// cache alone: reading a sandbox never waits on a link that is down.
func (e *Engine) engineUnreachable(sb *Sandbox) string {
	if sb.Engine == "" {
		return ""
	}
	n := e.namedEngine(sb.Engine)
	if n == nil {
		return fmt.Sprintf("engine %s is not in the settings any more; add it again to reach this sandbox", sb.Engine)
	}
	c, ok := e.probes.cached(n.Name())
	if !ok || c.Usable() {
		return ""
	}
	return c.Reason
}

// engineInfos is the capability card's list of engines.
func (e *Engine) engineInfos(ctx context.Context, caps Capabilities, refresh bool) []EngineInfo {
	out := []EngineInfo{}
	counts := map[string]int{}
	_ = e.store.EachSandbox(func(data []byte) error {
		var s struct {
			Engine  string `json:"engine"`
			Backend string `json:"backend"`
		}
		if json.Unmarshal(data, &s) == nil && (s.Engine != "" || s.Backend == "docker") {
			name := s.Engine
			if name == "" {
				name = LocalEngine
			}
			counts[name]++
		}
		return nil
	})
	for _, c := range caps.Backends {
		if c.Backend == "docker" {
			info := engineInfo(LocalEngine, c)
			info.Sandboxes = counts[LocalEngine]
			out = append(out, info)
		}
	}
	e.engines.mu.Lock()
	named := make([]*namedEngine, 0, len(e.engines.named))
	for _, n := range e.engines.named {
		named = append(named, n)
	}
	e.engines.mu.Unlock()
	slices.SortFunc(named, func(a, b *namedEngine) int { return strings.Compare(a.cfg.Name, b.cfg.Name) })
	infos := make([]EngineInfo, len(named))
	var wg sync.WaitGroup
	for i, n := range named {
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos[i] = engineInfo(n.cfg.Name, e.probes.probe(ctx, n, refresh))
			infos[i].Remote = true
			infos[i].Sandboxes = counts[n.cfg.Name]
		}()
	}
	wg.Wait()
	return append(out, infos...)
}

func engineInfo(name string, c backends.Capability) EngineInfo {
	info := EngineInfo{Name: name, State: c.State, Version: c.Version, Reason: c.Reason, Host: c.Details["host"], From: c.Details["from"], Remote: c.Details["elsewhere"] == "true"}
	info.CPUs, _ = strconv.Atoi(c.Details["cpus"])
	info.MemoryBytes, _ = strconv.ParseInt(c.Details["memoryBytes"], 10, 64)
	return info
}

// engineWatchEvery is how often a named engine is probed in the
// background.
const engineWatchEvery = 5 * time.Second

// startEngines starts a watcher per named engine (Start).
func (e *Engine) startEngines(ctx context.Context) {
	es := &e.engines
	es.mu.Lock()
	es.ctx = ctx
	list := make([]*namedEngine, 0, len(es.named))
	for _, n := range es.named {
		list = append(list, n)
	}
	es.mu.Unlock()
	for _, n := range list {
		e.watchEngine(ctx, n)
	}
}

// watchEngine probes n until ctx ends or n is closed. Each time it comes
// to answer (at start, and after it was gone) its containers are
// reconciled: those of sandboxes that are gone go, the rest are adopted;
// while it answers, idle ones are pruned. Called with engines.mu held.
func (e *Engine) watchEngine(ctx context.Context, n *namedEngine) {
	ctx, n.stop = context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(engineWatchEvery)
		defer t.Stop()
		lastPrune := time.Time{}
		for {
			c := e.probes.probe(ctx, n, true)
			was := n.seenState()
			n.setSeen(c.State)
			switch {
			case ctx.Err() != nil:
				return
			case c.Usable() && was != backends.Healthy:
				e.forgetStatusOn(n.cfg.Name)
				if err := e.reconcileEngine(ctx, n); err != nil {
					e.log.Warn("Reconciling an engine failed.", "engine", n.cfg.Name, "err", err)
				} else if was != "" {
					e.log.Info("An engine answers again; its sandboxes were adopted.", "engine", n.cfg.Name)
				}
			case !c.Usable() && was == backends.Healthy:
				e.forgetStatusOn(n.cfg.Name)
				e.log.Warn("An engine stopped answering; its sandboxes are unreachable.", "engine", n.cfg.Name, "reason", c.Reason)
			}
			if c.Usable() && time.Since(lastPrune) > 5*time.Minute {
				lastPrune = time.Now()
				if err := n.b.Prune(ctx, e.now()); err != nil && ctx.Err() == nil {
					e.log.Warn("Pruning an engine's sandboxes failed.", "engine", n.cfg.Name, "err", err)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

func (n *namedEngine) seenState() backends.ProbeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seen
}

func (n *namedEngine) setSeen(s backends.ProbeState) {
	n.mu.Lock()
	n.seen = s
	n.mu.Unlock()
}

// reconcileEngine reconciles the containers of engine n: those of
// sandboxes that are not on it any more go, the rest are adopted.
func (e *Engine) reconcileEngine(ctx context.Context, n *namedEngine) error {
	known := map[string]bool{}
	for _, id := range e.sandboxesOn(n.cfg.Name) {
		known[id] = true
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return n.b.Reconcile(rctx, func(id string) bool { return known[id] })
}

// ReconcileEngine runs an engine's reconciliation now (tests, and the
// engine's verb for it).
func (e *Engine) ReconcileEngine(ctx context.Context, name string) error {
	n := e.namedEngine(name)
	if n == nil {
		return &NotFoundError{Kind: "engine", ID: name}
	}
	return e.reconcileEngine(ctx, n)
}

// forgetStatusOn drops the cached container states of the sandboxes on
// engine name.
func (e *Engine) forgetStatusOn(name string) {
	for _, id := range e.sandboxesOn(name) {
		e.forgetStatus(id)
	}
}

// closeEngines closes the named engines' backends (Close).
func (e *Engine) closeEngines() {
	e.engines.mu.Lock()
	defer e.engines.mu.Unlock()
	for name, n := range e.engines.named {
		e.closeEngine(n)
		delete(e.engines.named, name)
	}
}

// linkLost makes the next look at sb's engine probe it again, when err
// says its daemon stopped answering: its sandboxes show unreachable at
// once rather than after the probe's time to live.
func (e *Engine) linkLost(sb *Sandbox, err error) {
	var de *docker.DaemonError
	if sb.Engine == "" || !errors.As(err, &de) {
		return
	}
	if n := e.namedEngine(sb.Engine); n != nil {
		e.probes.forget(n.Name())
		go e.probes.probe(context.Background(), n, true)
	}
	e.forgetStatus(sb.ID)
}

// UnreachableError is an operation on a sandbox whose engine does not
// answer: nothing was done, and the sandbox is kept.
type UnreachableError struct {
	Engine, Reason string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("engine %s is unreachable, so nothing was done (the sandbox is kept, and is adopted again when the engine answers): %s", e.Engine, e.Reason)
}
