package daemon

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/internal/version"
)

// DefaultListen is the dashboard's address when --listen is not given:
// SENCLAW_LISTEN (set, even to ""), else 127.0.0.1:7878.
func DefaultListen(lookupEnv func(string) (string, bool)) (addr string, given bool) {
	if l, ok := lookupEnv("SENCLAW_LISTEN"); ok {
		return l, true
	}
	return "127.0.0.1:7878", false
}

// serve runs `senclaw serve`: the engine and its API with no window, until
// ctx ends or a client stops it. When the engine cannot start (its store
// cannot be opened), the API still answers, with 503 and the reason.
func serve(ctx context.Context, h cli.Host, o cli.ServeOptions) int {
	fallback := ""
	if !o.ListenGiven {
		fallback = "127.0.0.1:0" // the default port may be taken; any free one will do
	}
	d, code := newDaemon(h, Options{Listen: o.Listen, FallbackListen: fallback, LAN: o.LAN, LANFromSettings: true, TLSCert: o.TLSCert, TLSKey: o.TLSKey}, true)
	if d == nil {
		return code
	}
	defer d.Close()
	_, err := d.Start(ctx)
	if err == nil {
		err = d.Wait()
	}
	_ = notifySystemd("STOPPING=1")
	if err != nil {
		fmt.Fprintln(h.Stderr, "senclaw serve:", err)
		return exitCode(err)
	}
	return 0
}

// newDaemon builds the daemon of h with o's listeners: the engine's
// options from h, what it says once it listens on h's stdout and stderr
// (and, with notify, to systemd). On failure it has said why and returns
// the exit code.
func newDaemon(h cli.Host, o Options, notify bool) (*Daemon, int) {
	opts, err := EngineOptions(h.DataDir, h.Getenv, h.Logger)
	if err != nil {
		fmt.Fprintln(h.Stderr, "senclaw:", err)
		return nil, cli.ExitFailure
	}
	if opts.AheadOneShots, err = aheadOneShots(h.Getenv); err != nil {
		fmt.Fprintln(h.Stderr, "senclaw:", err)
		return nil, cli.ExitUsage
	}
	o.Engine, o.Version, o.Logger, o.Stderr = opts, version.Version(), h.Logger, h.Stderr
	o.Autostart = AutostartEntry(h.Getenv, h.CLI)
	o.Ready = func(info apitype.DaemonInfo) {
		if info.Note != "" {
			fmt.Fprintln(h.Stderr, "senclaw: note:", info.Note)
		}
		if info.URL != "" {
			fmt.Fprintf(h.Stdout, "listening on %s\n", info.URL)
		}
		if info.LAN != nil {
			fmt.Fprintf(h.Stdout, "LAN listener on %s (TLS; agent and tenant tokens only), certificate SHA-256 %s\n", info.LAN.URL, info.LAN.Fingerprint)
		}
		fmt.Fprintf(h.Stdout, "socket %s\n", info.Socket)
		if !notify {
			return
		}
		if err := notifySystemd("READY=1"); err != nil {
			h.Logger.Warn("Could not tell systemd the daemon is ready.", "err", err)
		}
	}
	d, err := New(o)
	if err != nil {
		fmt.Fprintln(h.Stderr, "senclaw:", err)
		return nil, exitCode(err)
	}
	return d, 0
}

// exitCode is the exit code of a daemon that stopped for err.
func exitCode(err error) int {
	if errors.As(err, new(*UsageError)) {
		// Not worth a restart (the user unit's RestartPreventExitStatus).
		return cli.ExitUsage
	}
	return cli.ExitFailure
}

// maxAheadOneShots bounds SENCLAW_AHEAD_ONESHOTS.
const maxAheadOneShots = 8

// aheadOneShots is how many one-shot sandboxes the engine keeps made
// ahead (app.Options.AheadOneShots): SENCLAW_AHEAD_ONESHOTS when set.
// SENCLAW_READY_ONESHOTS, its former name, is read when it is not, so
// that a unit or a script that sets the old name keeps its count.
func aheadOneShots(getenv func(string) string) (int, error) {
	name := "SENCLAW_AHEAD_ONESHOTS"
	v := getenv(name)
	if v == "" {
		if old := getenv("SENCLAW_READY_ONESHOTS"); old != "" {
			name, v = "SENCLAW_READY_ONESHOTS", old
		}
	}
	if v == "" {
		return app.DefaultAheadOneShots, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxAheadOneShots {
		return 0, fmt.Errorf("%s=%q: want how many one-shot sandboxes to keep made ahead, from 0 (none) to %d", name, v, maxAheadOneShots)
	}
	return n, nil
}
