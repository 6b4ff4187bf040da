package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/autostart"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/doctor"
	"github.com/senclaw/sandbox/app/mcp"
	"github.com/senclaw/sandbox/app/scheduler"
	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/frontend"
)

// serveFlags are the flags of `senclaw serve`.
type serveFlags struct {
	listen, tlsCert, tlsKey string
	allowRemote             bool
	// listenGiven: --listen was given; without it a taken default port
	// falls back to any free one.
	listenGiven bool
}

func declareServeFlags(fs *flag.FlagSet) *serveFlags {
	sf := &serveFlags{}
	fs.StringVar(&sf.listen, "listen", "127.0.0.1:7878", "`ADDR` of the dashboard and REST API over HTTP (\"\" for the Unix socket only)")
	fs.BoolVar(&sf.allowRemote, "allow-remote", false, "allow a non-loopback --listen address (requires --tls-cert and --tls-key)")
	fs.StringVar(&sf.tlsCert, "tls-cert", "", "TLS certificate `FILE` for --allow-remote")
	fs.StringVar(&sf.tlsKey, "tls-key", "", "TLS key `FILE` for --allow-remote")
	return sf
}

// serve runs `senclaw serve`: the engine and its API with no window. When
// the engine cannot start (its store cannot be opened), the API still
// answers, with 503 and the reason.
func serve(ctx context.Context, opts app.Options, sf serveFlags, logger *slog.Logger, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, engine, release, code := hostEngine(ctx, cancel, opts, logger, stderr)
	if srv == nil {
		return code
	}
	defer release()
	fallback := ""
	if !sf.listenGiven {
		fallback = "127.0.0.1:0" // the default port may be taken; any free one will do
	}
	err := srv.Serve(ctx, api.DaemonOptions{
		RuntimeDir: opts.RuntimeDir, Listen: sf.listen, FallbackListen: fallback, AllowRemote: sf.allowRemote, TLSCert: sf.tlsCert, TLSKey: sf.tlsKey,
		Ready: func(info api.DaemonInfo) {
			apiReady(srv, engine, info.URL)
			if info.URL != "" {
				fmt.Fprintf(stdout, "listening on %s\n", info.URL)
			}
			fmt.Fprintf(stdout, "socket %s\n", info.Socket)
			if err := notifySystemd("READY=1"); err != nil {
				logger.Warn("Could not tell systemd the daemon is ready.", "err", err)
			}
		},
	})
	_ = notifySystemd("STOPPING=1")
	if err != nil {
		fmt.Fprintln(stderr, "senclaw serve:", err)
		return cli.ExitFailure
	}
	return 0
}

// maxReadyOneShots bounds SENCLAW_READY_ONESHOTS.
const maxReadyOneShots = 8

// readyOneShots is how many one-shot sandboxes the engine keeps ready
// (app.Options.ReadyOneShots): SENCLAW_READY_ONESHOTS when set.
func readyOneShots(v string) (int, error) {
	if v == "" {
		return app.DefaultReadyOneShots, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxReadyOneShots {
		return 0, fmt.Errorf("SENCLAW_READY_ONESHOTS=%q: want how many one-shot sandboxes to keep ready, from 0 (none) to %d", v, maxReadyOneShots)
	}
	return n, nil
}

// hostEngine does what every process hosting the engine does first: take
// the per-user daemon lock, load the API token, open the engine (or keep
// the reason it could not open, which the API then answers with 503) and
// build the API server. cancel stops the host (POST /daemon/stop). On
// failure srv is nil and code the exit code; else release undoes it all.
func hostEngine(ctx context.Context, cancel context.CancelFunc, opts app.Options, logger *slog.Logger, stderr io.Writer) (srv *api.Server, engine *app.Engine, release func(), code int) {
	lock, err := api.AcquireLock(opts.RuntimeDir)
	if err != nil {
		fmt.Fprintln(stderr, "senclaw:", err)
		return nil, nil, nil, cli.ExitUsage
	}
	token, err := api.LoadOrCreateToken(filepath.Join(opts.ConfigDir, "api-token"))
	if err != nil {
		lock.Release()
		fmt.Fprintln(stderr, "senclaw:", err)
		return nil, nil, nil, cli.ExitFailure
	}
	if opts.ReadyOneShots, err = readyOneShots(os.Getenv("SENCLAW_READY_ONESHOTS")); err != nil {
		lock.Release()
		fmt.Fprintln(stderr, "senclaw:", err)
		return nil, nil, nil, cli.ExitUsage
	}
	engine, engineErr := app.New(opts)
	if errors.Is(engineErr, store.ErrLocked) {
		// Not a broken store: another daemon owns this data dir, one
		// started with another runtime dir, so its lock did not stop us.
		lock.Release()
		fmt.Fprintf(stderr, "senclaw: %v; is a daemon of this data dir running with another XDG_RUNTIME_DIR? Stop it (senclaw stop, in its environment) or use another --data-dir\n", engineErr)
		return nil, nil, nil, cli.ExitUsage
	}
	release = lock.Release
	var sched *scheduler.Scheduler
	var apps *spaceapps.Supervisor
	if engineErr != nil {
		logger.Error("The engine could not start; the API answers 503 until it is fixed.", "err", engineErr)
		fmt.Fprintln(stderr, "senclaw: the engine could not start:", engineErr)
	} else {
		engine.Start(ctx)
		release = func() { engine.Close(); lock.Release() }
		// The scheduler and the Space Apps start after the engine and stop
		// before it closes, so that their last runs are recorded (issues
		// #16, #11); apps autostart once the API listens (apiReady).
		if sched, err = scheduler.New(scheduler.Options{Engine: engine, Logger: logger}); err != nil {
			logger.Error("The scheduler could not load its schedules; nothing scheduled fires.", "err", err)
			fmt.Fprintln(stderr, "senclaw: the scheduler could not start:", err)
			sched = nil
		} else {
			sched.Start(ctx)
		}
		if apps, err = spaceapps.New(spaceapps.Options{Engine: engine, Logger: logger}); err != nil {
			logger.Error("Space Apps could not be loaded; their API answers 503.", "err", err)
			apps = nil
		} else {
			apps.Recover(ctx)
		}
		release = func() {
			if apps != nil {
				apps.Close()
			}
			if sched != nil {
				sched.Stop()
			}
			engine.Close()
			lock.Release()
		}
	}
	srv = api.New(api.Options{Engine: engine, EngineErr: engineErr, Token: token, Version: version, Logger: logger, Dashboard: frontend.Dist(), OnStop: cancel,
		Autostart: autostartEntry(), Scheduler: sched, Apps: apps,
		Doctor: doctor.New(doctor.Options{Engine: engine, EngineErr: engineErr, DataDir: opts.DataDir, EUID: opts.EUID})})
	// MCP over Streamable HTTP at /mcp: the same tools as sandbox-server,
	// reaching the engine through the API handler in this process.
	mh := mcp.NewHTTPHandler(mcp.HTTPOptions{
		Principal: func(r *http.Request) string { return api.Principal(r.Context()) },
		ClientFor: func(string) *client.Client { return client.InProcess(srv, "", api.AsOwner) },
		Limits: func() (time.Duration, int) {
			if engine == nil {
				d := app.DefaultSettings()
				return time.Duration(d.McpSessionIdleMinutes) * time.Minute, d.McpMaxSessions
			}
			s := engine.Settings()
			return time.Duration(s.McpSessionIdleMinutes) * time.Minute, s.McpMaxSessions
		},
		Version: version, Logger: logger,
	})
	srv.MountMCP(mh)
	closeEngine := release
	release = func() { mh.Close(); closeEngine() }
	return srv, engine, release, 0
}

// apiReady is what the host does once the API listens: the engine learns
// the API's port (which no sandbox may reach), the Space Apps where the
// API is (for daemonApi apps), and those that autostart start.
func apiReady(srv *api.Server, engine *app.Engine, apiURL string) {
	protectAPIPort(engine, apiURL)
	if apps := srv.Apps(); apps != nil {
		apps.SetAPI(apiURL)
		apps.Autostart()
	}
}

// autostartEntry is this user's login autostart entry, starting this very
// senclaw executable; nil without a config dir.
func autostartEntry() *autostart.Entry {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return nil
		}
		dir = filepath.Join(home, ".config")
	}
	exe, err := os.Executable()
	if err == nil {
		if real, rerr := filepath.EvalSymlinks(exe); rerr == nil {
			exe = real
		}
	}
	return &autostart.Entry{Dir: filepath.Join(dir, "autostart"), Exec: exe}
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// connectDaemon returns a client of this user's daemon, starting a headless
// one in the background when none answers. A daemon that answers but
// whose engine could not start (a damaged store) is an
// *engineUnavailable, with the client, at once: starting another would
// only find it running.
func connectDaemon(ctx context.Context, runtimeDir, dataDir string, stderr io.Writer) (*client.Client, error) {
	// A daemon that listens takes the connection at once: the command's
	// own request follows on it, with no health round trip before it. A
	// daemon whose engine could not start answers that request 503, which
	// the commands say as a refusal (exit 126) with its reason.
	if c, err := client.ConnectSocket(api.SocketPath(runtimeDir), 2*time.Second); err == nil {
		return c, nil
	}
	c := client.DialSocket(api.SocketPath(runtimeDir))
	if err := spawnDaemon(runtimeDir, dataDir); err != nil {
		return nil, fmt.Errorf("no daemon answers and one could not be started: %w", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		err := c.Ping(ctx, time.Second)
		if err == nil {
			return c, nil
		}
		if down := asUnavailable(err); down != nil {
			return c, down
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("started a daemon, but it does not answer on %s; see %s", api.SocketPath(runtimeDir), filepath.Join(runtimeDir, "daemon.log"))
}

// engineUnavailable is a daemon that answers /health with 503: it runs,
// but its engine could not start, for Reason.
type engineUnavailable struct{ Reason string }

func (e *engineUnavailable) Error() string {
	return "the daemon runs, but its engine cannot: " + e.Reason + "; nothing was run (senclaw doctor says more; senclaw stop stops the daemon)"
}

func asUnavailable(err error) *engineUnavailable {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == http.StatusServiceUnavailable {
		return &engineUnavailable{Reason: ce.Message}
	}
	return nil
}

// spawnDaemon starts `senclaw serve` detached from this process, logging
// to the runtime dir.
func spawnDaemon(runtimeDir, dataDir string) error {
	// What would stop the daemon's engine from starting (SENCLAW_BACKENDS
	// naming no backend, a bad SENCLAW_READY_ONESHOTS) is said here, not
	// only in its log.
	if _, err := engineOptions(dataDir, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	if _, err := readyOneShots(os.Getenv("SENCLAW_READY_ONESHOTS")); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(runtimeDir, 0o700); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(runtimeDir, "daemon.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{}
	if dataDir != "" {
		args = append(args, "--data-dir", dataDir)
	}
	args = append(args, "serve")
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// stopDaemon asks the daemon to stop and waits until it has.
func stopDaemon(ctx context.Context, runtimeDir string, stdout, stderr io.Writer) int {
	c := client.DialSocket(api.SocketPath(runtimeDir))
	if err := c.Ping(ctx, 2*time.Second); err != nil && asUnavailable(err) == nil {
		fmt.Fprintln(stdout, "senclaw is not running")
		return 0
	}
	if err := c.StopDaemon(ctx); err != nil {
		fmt.Fprintln(stderr, "senclaw stop:", err)
		return cli.ExitFailure
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(api.SocketPath(runtimeDir)); os.IsNotExist(err) {
			fmt.Fprintln(stdout, "senclaw stopped")
			return 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintln(stderr, "senclaw stop: the daemon did not stop within 20 s")
	return cli.ExitFailure
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
