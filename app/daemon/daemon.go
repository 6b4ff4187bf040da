// Package daemon hosts the engine and its faces in one process.
//
// A Daemon is what `senclaw serve` and the desktop app run: the per-user
// lock, the API token, the engine (or the reason it could not open,
// which the API then answers with 503), the scheduler, the Space Apps,
// the REST API on the Unix socket and the dashboard's TCP port, and MCP
// over Streamable HTTP at /mcp. New takes what must be held first, Start
// starts it all and returns once the API answers, Wait returns when it
// stops, Close releases everything New and Start took.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/autostart"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/doctor"
	"github.com/senclaw/sandbox/app/mcp"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/scheduler"
	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/app/tenants"
	"github.com/senclaw/sandbox/app/tokens"
	"github.com/senclaw/sandbox/frontend"
)

// Options configure a Daemon.
type Options struct {
	// Engine are the engine's options: its dirs, backends and logger.
	Engine app.Options
	// Listen is the dashboard's TCP address ("" for the Unix socket
	// only); FallbackListen, when set, is used when a program of this
	// user holds it; WithoutTCPIfSquatted serves the socket alone when
	// another user does (api.DaemonOptions says more).
	Listen               string
	FallbackListen       string
	WithoutTCPIfSquatted bool
	// LAN is the LAN listener's IP:PORT ("" none; the lanListen setting
	// when LANFromSettings): the API and /mcp to other machines, over TLS,
	// to agent and tenant tokens only. TLSCert and TLSKey are its
	// certificate; without them the engine makes one and keeps it in the
	// config dir.
	LAN             string
	LANFromSettings bool
	TLSCert, TLSKey string
	// Version is what /status and MCP's initialize say.
	Version string
	// Autostart is the owner's login autostart entry; nil: none.
	Autostart *autostart.Entry
	// Logger gets the daemon's log; nil discards it.
	Logger *slog.Logger
	// Stderr gets what a person must read at once (the engine could not
	// start); nil discards it.
	Stderr io.Writer
	// Ready, when set, is called once the API listens, with where.
	Ready func(info apitype.DaemonInfo)
}

// Daemon is the engine and its API in this process.
type Daemon struct {
	opts   Options
	log    *slog.Logger
	lock   *api.Lock
	token  string
	engine *app.Engine // nil when it could not open: engineErr says why
	// engineErr is why the engine could not open (its store is damaged):
	// the API still answers, with 503 and this reason.
	engineErr error
	sched     *scheduler.Scheduler
	apps      *spaceapps.Supervisor
	tokens    *tokens.Registry
	tenants   *tenants.Directory
	srv       *api.Server
	mcp       *mcp.HTTPHandler
	stop      context.CancelFunc
	served    chan error
}

// UsageError is a daemon that cannot start for a reason a restart would
// not change: another daemon holds the lock or the store, a setting is
// out of range, the dashboard's port is another user's. `senclaw serve`
// exits 2 for it, which its systemd unit does not restart.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// New takes the per-user daemon lock, loads (or makes) the API token and
// opens the engine. An engine that cannot open (a damaged store) is no
// error: the daemon then serves its API, which answers 503 with the
// reason, and the doctor, which can repair it.
func New(opts Options) (*Daemon, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	d := &Daemon{opts: opts, log: opts.Logger}
	lock, err := api.AcquireLock(opts.Engine.RuntimeDir)
	if err != nil {
		return nil, &UsageError{err}
	}
	tokenPath := filepath.Join(opts.Engine.ConfigDir, "api-token")
	token, replaced, err := api.LoadOrCreateToken(tokenPath)
	if err != nil {
		lock.Release()
		return nil, err
	}
	if replaced {
		d.log.Warn("The API token was open to other users, or not a private file of this user: a new one replaces it.", "path", tokenPath)
		fmt.Fprintf(opts.Stderr, "senclaw: the API token %s could be read by other users (or was not your private file); a new one replaces it, and the old one no longer works (a script that holds it reads the file again)\n", tokenPath)
	}
	d.lock, d.token = lock, token
	d.engine, d.engineErr = app.New(opts.Engine)
	if errors.Is(d.engineErr, store.ErrLocked) {
		// Not a broken store: another daemon owns this data dir, one
		// started with another runtime dir, so its lock did not stop us.
		lock.Release()
		return nil, &UsageError{fmt.Errorf("%w; is a daemon of this data dir running with another XDG_RUNTIME_DIR? Stop it (senclaw stop, in its environment) or use another --data-dir", d.engineErr)}
	}
	if d.engineErr != nil {
		d.engine = nil
		d.log.Error("The engine could not start; the API answers 503 until it is fixed.", "err", d.engineErr)
		fmt.Fprintln(opts.Stderr, "senclaw: the engine could not start:", d.engineErr)
	}
	return d, nil
}

// Start starts the engine, the scheduler and the Space Apps, and serves
// the API; it returns once the API listens, with where. The daemon runs
// until ctx ends, Stop is called or a client asks it to stop (POST
// /daemon/stop); Wait says when.
func (d *Daemon) Start(ctx context.Context) (apitype.DaemonInfo, error) {
	ctx, d.stop = context.WithCancel(ctx)
	if d.engine != nil {
		d.engine.Start(ctx)
		d.startPrincipals()
		// The scheduler and the Space Apps start after the engine and stop
		// before it closes, so that their last runs are recorded; apps
		// autostart once the API listens (ready).
		sched, err := scheduler.New(scheduler.Options{Engine: d.engine, Logger: d.log})
		if err != nil {
			d.log.Error("The scheduler could not load its schedules; nothing scheduled fires.", "err", err)
			fmt.Fprintln(d.opts.Stderr, "senclaw: the scheduler could not start:", err)
		} else {
			d.sched = sched
			sched.Start(ctx)
		}
		apps, err := spaceapps.New(spaceapps.Options{Engine: d.engine, Logger: d.log})
		if err != nil {
			d.log.Error("Space Apps could not be loaded; their API answers 503.", "err", err)
		} else {
			d.apps = apps
			apps.Recover(ctx)
		}
	}
	o := d.opts
	d.srv = api.New(api.Options{Engine: d.engine, EngineErr: d.engineErr, Token: d.token, Version: o.Version, Logger: d.log,
		Dashboard: frontend.Dist(), OnStop: d.stop, Autostart: o.Autostart, Scheduler: d.sched, Apps: d.apps, Tokens: d.tokens, Tenants: d.tenants,
		Doctor: doctor.New(doctor.Options{Engine: d.engine, EngineErr: d.engineErr, DataDir: o.Engine.DataDir, EUID: o.Engine.EUID,
			ConfigDir: o.Engine.ConfigDir, RuntimeDir: o.Engine.RuntimeDir, Listen: o.Listen})})
	// MCP over Streamable HTTP at /mcp: the same tools as sandbox-server,
	// reaching the engine through the API handler in this process.
	d.mcp = mcp.NewHTTPHandler(mcp.HTTPOptions{
		// Each session acts as the principal that opened it: the API
		// decides its every call as it would that principal's request.
		Principal: func(r *http.Request) principal.Principal { return api.Principal(r.Context()) },
		ClientFor: func(p principal.Principal) *client.Client {
			return client.InProcess(d.srv, "", func(ctx context.Context) context.Context { return api.As(ctx, p) })
		},
		Limits:  d.mcpLimits,
		Version: o.Version, Logger: d.log,
	})
	d.srv.MountMCP(d.mcp)

	ready := make(chan apitype.DaemonInfo, 1)
	d.served = make(chan error, 1)
	go func() {
		d.served <- d.srv.Serve(ctx, api.DaemonOptions{
			RuntimeDir: o.Engine.RuntimeDir, Lock: d.lock, Listen: o.Listen, FallbackListen: o.FallbackListen,
			WithoutTCPIfSquatted: o.WithoutTCPIfSquatted, LAN: d.lan(), TLSCert: o.TLSCert, TLSKey: o.TLSKey, LANDir: o.Engine.ConfigDir,
			Ready: func(info apitype.DaemonInfo) {
				d.ready(info.URL)
				if o.Ready != nil {
					o.Ready(info)
				}
				ready <- info
			},
		})
	}()
	select {
	case info := <-ready:
		return info, nil
	case err := <-d.served:
		d.served <- err // for Wait
		var taken *api.PortTakenError
		if errors.As(err, &taken) {
			return apitype.DaemonInfo{}, &UsageError{err}
		}
		return apitype.DaemonInfo{}, err
	}
}

// startPrincipals loads the agent tokens and the tenants. Without its
// tokens no agent is known: the owner's socket and token still work, and
// every agent is refused; without its tenants no tenant's token works.
func (d *Daemon) startPrincipals() {
	toks, err := tokens.New(tokens.Options{Docs: d.engine.TokenDocs(), Logger: d.log})
	if err != nil {
		d.log.Error("The agent tokens could not be read; no agent token works.", "err", err)
		fmt.Fprintln(d.opts.Stderr, "senclaw: the agent tokens could not be read:", err)
		return
	}
	d.tokens = toks
	tens, err := tenants.New(tenants.Options{Engine: d.engine, Docs: d.engine.TenantDocs(), Tokens: toks, Logger: d.log})
	if err != nil {
		d.log.Error("The tenants could not be read; no tenant's token works.", "err", err)
		fmt.Fprintln(d.opts.Stderr, "senclaw: the tenants could not be read:", err)
		return
	}
	d.tenants = tens
}

// lan is the LAN listener's address: Options.LAN, else the lanListen
// setting when the options say to read it.
func (d *Daemon) lan() string {
	if d.opts.LAN != "" || !d.opts.LANFromSettings || d.engine == nil {
		return d.opts.LAN
	}
	return d.engine.Settings().LANListen
}

// mcpLimits are the MCP sessions' idle time and cap, from the settings.
func (d *Daemon) mcpLimits() (time.Duration, int) {
	s := app.DefaultSettings()
	if d.engine != nil {
		s = d.engine.Settings()
	}
	return time.Duration(s.McpSessionIdleMinutes) * time.Minute, s.McpMaxSessions
}

// ready is what the daemon does once the API listens: the engine learns
// the API's port (which no sandbox may reach), the Space Apps where the
// API is (for daemonApi apps), and those that autostart start.
func (d *Daemon) ready(apiURL string) {
	protectAPIPort(d.engine, apiURL)
	if d.apps != nil {
		d.apps.SetAPI(apiURL)
		d.apps.Autostart()
	}
}

// Stop asks the daemon to stop; Wait returns once it has.
func (d *Daemon) Stop() {
	if d.stop != nil {
		d.stop()
	}
}

// Wait blocks until the daemon stops, and says why it did when that was
// no request to stop.
func (d *Daemon) Wait() error {
	if d.served == nil {
		return nil
	}
	err := <-d.served
	d.served <- err
	return err
}

// Close stops what Start started, the Space Apps and the scheduler before
// the engine (so that their last runs are recorded), and releases the
// lock.
func (d *Daemon) Close() {
	d.Stop()
	if d.mcp != nil {
		d.mcp.Close()
	}
	if d.apps != nil {
		d.apps.Close()
	}
	if d.sched != nil {
		d.sched.Stop()
	}
	if d.engine != nil {
		d.engine.Close()
	}
	d.lock.Release()
}

// protectAPIPort tells the engine the API's TCP port, which no sandbox may
// reach whatever its loopback rules say.
func protectAPIPort(engine *app.Engine, apiURL string) {
	if engine == nil || apiURL == "" {
		return
	}
	if u, err := url.Parse(apiURL); err == nil {
		if p, err := strconv.Atoi(u.Port()); err == nil {
			engine.ProtectPort(p)
		}
	}
}

// AutostartEntry is this user's login autostart entry, starting the
// senclaw executable cli (the desktop app); nil without a config dir.
func AutostartEntry(getenv func(string) string, cli string) *autostart.Entry {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return nil
		}
		dir = filepath.Join(home, ".config")
	}
	return &autostart.Entry{Dir: filepath.Join(dir, "autostart"), Exec: cli}
}
