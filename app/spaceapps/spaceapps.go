// Package spaceapps runs Space Apps: local web apps the engine supervises
// and confines.
//
// A Space App is a server process (someone else's tool, a dev server, an
// agent's UI) that the engine registers from a folder or a zip with a
// senclaw-app.json manifest, starts, keeps alive, confines and watches.
//
// It is a capability built on the engine's exported surface only. An
// app's server is a background run through the single runner (source
// space-app) in a sandbox of kind app whose workspace is the app's own
// directory, so limits, records, network rules (the engine's proxy and
// the app's own network namespace) and tracing are the ones sandboxes
// have. Supervision uses the words people know: systemd's Restart=
// on-failure/always/never and its start limit (5 failed starts in 5
// minutes: crash-looping), PM2's exponential backoff (1 s doubling to
// 60 s, reset after 60 s healthy), supervisord's graceful stop (SIGTERM
// to the whole tree, SIGKILL after stopTimeoutSec) and log rotation (10
// MiB, 3 files). "Started" means a 2xx from the health path. What a
// launch really got is stored when it starts, so "needs restart" compares
// the saved configuration with facts, never with a recomputation.
package spaceapps

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/monitor"
)

// Supervision timings.
const (
	// ProbeTimeout bounds one health probe; ProbeEvery is the time
	// between two probes of a running app.
	ProbeTimeout = 3 * time.Second
	ProbeEvery   = 10 * time.Second
	// BackoffFirst doubles up to BackoffMax between restarts of a crashed
	// app, and resets once it has been healthy for HealthyReset.
	BackoffFirst = time.Second
	BackoffMax   = 60 * time.Second
	HealthyReset = 60 * time.Second
	// GiveUpStarts failed starts within GiveUpWindow: crash-looping.
	GiveUpStarts = 5
	GiveUpWindow = 5 * time.Minute
	// healthKept is how many probes the health history keeps.
	healthKept = 60
)

// Options configure a Supervisor.
type Options struct {
	Engine *app.Engine
	Logger *slog.Logger
	// Clock is the one source of time of supervision; nil is the real one.
	Clock Clock
	// SystemPath is the PATH sandboxed code gets (requires.bin is looked
	// up there); "" is the engine's default.
	SystemPath string
	// OnAttention, when set, is told when an app comes to need a restart
	// or gives up (crash-looping); the desktop shell notifies from the
	// API instead, this is for other hosts and tests.
	OnAttention func(appID, what string)
	// MaxApps bounds the apps registered at once (each holds a sandbox
	// and, unless it runs in place, a copy of up to MaxCopyBytes); 0 is
	// DefaultMaxApps.
	MaxApps int
}

// DefaultMaxApps is Options.MaxApps's default.
const DefaultMaxApps = 256

// maxUnpacking bounds the registrations that unpack a zip or copy a
// folder into the staging folder at once: each may stage up to
// MaxUnzippedBytes (a zip) or MaxCopyBytes (a folder).
const maxUnpacking = 2

// Supervisor registers, starts, supervises and watches the Space Apps of
// one engine. Build it after the engine with New, Recover, Autostart once the
// API listens, and Close it before the engine closes.
type Supervisor struct {
	e     *app.Engine
	log   *slog.Logger
	clock Clock
	opts  Options
	req   *requirements
	dirs  dirs

	base   context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	apps    map[string]*appState
	tokens  map[string]string // app token -> app id
	apiURL  string
	apiPort int
	closed  bool
	wg      sync.WaitGroup
	// unpacking counts the registrations staging files (maxUnpacking).
	unpacking chan struct{}
}

// dirs are where the supervisor keeps what it owns, under the engine's
// data dir: the apps' copies, their logs (out of their reach) and the
// private temp dirs of apps run without a sandbox.
type dirs struct{ apps, logs, tmp, staging string }

// New loads the registered apps. Nothing starts until Autostart or
// Start.
func New(opts Options) (*Supervisor, error) {
	if opts.Engine == nil {
		return nil, errors.New("spaceapps: no engine")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.SystemPath == "" {
		opts.SystemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	data := opts.Engine.DataDir()
	s := &Supervisor{
		e: opts.Engine, log: opts.Logger, clock: opts.Clock, opts: opts,
		req:       &requirements{path: opts.SystemPath},
		dirs:      dirs{apps: filepath.Join(data, "apps"), logs: filepath.Join(data, "app-logs"), tmp: filepath.Join(data, "app-tmp"), staging: filepath.Join(data, "app-staging")},
		apps:      map[string]*appState{},
		tokens:    map[string]string{},
		unpacking: make(chan struct{}, maxUnpacking),
	}
	if s.opts.MaxApps <= 0 {
		s.opts.MaxApps = DefaultMaxApps
	}
	s.base, s.cancel = context.WithCancelCause(context.Background())
	for _, d := range []string{s.dirs.apps, s.dirs.tmp} {
		// Traversable (a root engine's sandbox user walks into its app's
		// directory below it), not listable.
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
		_ = os.Chmod(d, 0o711)
	}
	for _, d := range []string{s.dirs.logs, s.dirs.staging} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	var loadErr error
	var upgraded []*record
	err := s.e.EachSpaceApp(func(data []byte) error {
		rec, err := decodeRecord(data)
		if err != nil {
			loadErr = errors.Join(loadErr, err)
			return nil
		}
		if s.sandboxByDefault(rec) {
			upgraded = append(upgraded, rec)
		}
		a, err := s.newState(rec)
		if err != nil {
			loadErr = errors.Join(loadErr, err)
			return nil
		}
		s.apps[rec.Manifest.ID] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the Space Apps: %w", err)
	}
	for _, rec := range upgraded { // saved once the store's read is over
		if err := s.e.PutSpaceApp(rec.Manifest.ID, rec); err != nil {
			s.log.Error("A Space App's sandbox setting could not be saved.", "app", rec.Manifest.ID, "err", err)
		}
	}
	if loadErr != nil {
		s.log.Error("Some Space Apps could not be read; they are left out.", "err", loadErr)
	}
	return s, nil
}

// sandboxByDefault gives its sandbox to an app registered when apps ran
// without one unless their manifest asked: one whose sandbox is off with
// no one known to have turned it off, and whose manifest does not say
// "enabled": false. (A person who had turned it off turns it off again.)
// It reports whether rec changed (the caller saves it).
func (s *Supervisor) sandboxByDefault(rec *record) bool {
	if rec.Sandbox.Enabled || rec.DisabledBy != "" {
		return false
	}
	if b := rec.Manifest.Sandbox; b != nil && b.Enabled != nil && !*b.Enabled {
		rec.DisabledBy = DisabledByManifest
	} else {
		rec.Sandbox.Enabled = true
		s.log.Warn("A Space App registered when apps ran without a sandbox by default now runs in one; `senclaw apps sandbox --enabled off ID` turns it off again.", "app", rec.Manifest.ID)
	}
	return true
}

func (s *Supervisor) newState(rec *record) (*appState, error) {
	l, err := openLog(filepath.Join(s.dirs.logs, rec.Manifest.ID))
	if err != nil {
		return nil, err
	}
	a := &appState{id: rec.Manifest.ID, rec: rec, log: l, state: StateStopped}
	a.health.status = HealthUnknown
	return a, nil
}

// Recover finds what a killed engine's launches left behind and ends it
// (bwrap sandboxes die with the engine; an app run without a sandbox may
// leave children), so no app process of an earlier engine survives.
// Call it once, after the engine's Start and before Autostart.
func (s *Supervisor) Recover(ctx context.Context) {
	s.mu.Lock()
	all := s.list()
	s.mu.Unlock()
	for _, a := range all {
		a.mu.Lock()
		last := a.rec.Last
		a.mu.Unlock()
		if last == nil || last.EndedAt != nil {
			continue
		}
		pids, err := monitor.Leftovers(ctx, nil, last.Marker, last.UID)
		if err != nil {
			s.log.Warn("Looking for what an earlier engine's launch left behind failed.", "app", a.id, "err", err)
		}
		for _, pid := range pids {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		if len(pids) > 0 {
			s.log.Info("Processes an earlier engine's launch of a Space App left behind were killed.", "app", a.id, "pids", pids)
		}
		a.mu.Lock()
		now := s.clock.Now().UTC()
		a.rec.Last.EndedAt, a.rec.Last.Ended = &now, "the engine stopped while it ran (it was killed); nothing of it is left"
		_ = s.save(a)
		a.mu.Unlock()
	}
}

// SetAPI tells the supervisor where the engine's API listens over TCP
// (the daemon's URL), for apps with daemonApi.
func (s *Supervisor) SetAPI(apiURL string) {
	port := 0
	if u, err := url.Parse(apiURL); err == nil {
		port, _ = strconv.Atoi(u.Port())
	}
	s.mu.Lock()
	s.apiURL, s.apiPort = apiURL, port
	s.mu.Unlock()
}

// Autostart starts, in the background, every app whose manifest asks for
// it and that no person stopped, once the engine's backends have cleaned
// up after an earlier engine (so that no clean-up ends them).
func (s *Supervisor) Autostart() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-s.e.Reconciled():
		case <-time.After(30 * time.Second):
		case <-s.base.Done():
			return
		}
		s.mu.Lock()
		all := s.list()
		s.mu.Unlock()
		for _, a := range all {
			a.mu.Lock()
			want := a.rec.Manifest.Runtime.Autostart && !a.rec.StoppedByUser
			a.mu.Unlock()
			if want {
				if _, err := s.start(a, false, false); err != nil {
					s.log.Warn("A Space App did not autostart.", "app", a.id, "err", err)
				}
			}
		}
	}()
}

// Close stops every app (SIGTERM to its tree, SIGKILL after its stop
// timeout) without marking it stopped by a person, so that autostart
// applies at the next start, and waits for them.
func (s *Supervisor) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	all := s.list()
	s.mu.Unlock()
	s.cancel(stoppedWithEngine)
	// Every supervision loop stops its app (in parallel) and is waited
	// for, also one that a start began just before.
	s.wg.Wait()
	for _, a := range all {
		a.log.close()
	}
}

// list returns the apps by id. s.mu is held.
func (s *Supervisor) list() []*appState {
	out := make([]*appState, 0, len(s.apps))
	for _, a := range s.apps {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *appState) int {
		if a.id < b.id {
			return -1
		}
		return 1
	})
	return out
}

// find returns app id.
func (s *Supervisor) find(id string) (*appState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.apps[id]; a != nil {
		return a, nil
	}
	return nil, &app.NotFoundError{Kind: "Space App", ID: id}
}

// save stores a's record. a.mu is held.
func (s *Supervisor) save(a *appState) error {
	a.rec.UpdatedAt = s.clock.Now().UTC()
	if err := s.e.PutSpaceApp(a.id, a.rec); err != nil {
		return fmt.Errorf("saving Space App %s: %w", a.id, err)
	}
	return nil
}

// AppForToken returns the app whose own API token tok is, if any: such a
// token reaches only that app's runtime and logs routes.
func (s *Supervisor) AppForToken(tok string) (string, bool) {
	if tok == "" {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tokens[tok]
	return id, ok
}

func (s *Supervisor) issueToken(id string) string {
	tok := randomHex(32)
	s.mu.Lock()
	s.tokens[tok] = id
	s.mu.Unlock()
	return tok
}

func (s *Supervisor) revokeToken(tok string) {
	if tok == "" {
		return
	}
	s.mu.Lock()
	delete(s.tokens, tok)
	s.mu.Unlock()
}

func (s *Supervisor) api() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiURL, s.apiPort
}

// sandboxID is the id of app id's sandbox.
func sandboxID(id string) string { return "app-" + id }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// stageSlot waits for one of the maxUnpacking slots of staging (ctx
// ends the wait); release gives it back.
func (s *Supervisor) stageSlot(ctx context.Context) (release func(), err error) {
	select {
	case s.unpacking <- struct{}{}:
		return func() { <-s.unpacking }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another registration to finish unpacking: %w", ctx.Err())
	}
}

// roomForApp refuses a new app when MaxApps are registered.
func (s *Supervisor) roomForApp(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.apps[id]; known || len(s.apps) < s.opts.MaxApps {
		return nil
	}
	return &app.LimitError{Reason: fmt.Sprintf("refused: %d Space Apps are registered, the most the engine holds; remove apps you no longer need (senclaw apps rm ID)", len(s.apps))}
}
