//go:build linux || desktop

package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/desktop"
)

// runDesktop runs `senclaw` with no command: the engine and its API (as
// `senclaw serve` does: lock, token, socket, loopback TCP) and the tray in
// this process, and the dashboard window in a process of its own
// (senclaw-window, found next to this executable), which exists only
// while the window is open. Without a display, or without senclaw-window,
// it says so and serves the dashboard over HTTP instead.
func runDesktop(ctx context.Context, h cli.Host) int {
	listen, _ := DefaultListen(h.LookupEnv)
	display := firstNonEmpty(h.Getenv("WAYLAND_DISPLAY"), h.Getenv("DISPLAY"))
	if display == "" {
		fmt.Fprintln(h.Stderr, "senclaw: no display (DISPLAY and WAYLAND_DISPLAY are unset), so no window and no tray; serving the dashboard over HTTP instead (open it with `senclaw open`).")
		return serve(ctx, h, cli.ServeOptions{Listen: listen, ListenGiven: true})
	}
	window := findWindow()
	if window == "" {
		fmt.Fprintln(h.Stderr, "senclaw: senclaw-window is not installed next to senclaw-engine (a headless build: no window, no tray); serving the dashboard over HTTP instead, as `senclaw serve` does. Build the desktop app with make build-desktop.")
		return serve(ctx, h, cli.ServeOptions{Listen: listen, ListenGiven: true})
	}
	bus := desktop.SessionBusAddress(h.Getenv, os.Getuid())
	if bus != "" && h.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		// systray, and the window process, dial the bus named by the
		// environment.
		os.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)
	}
	notify := true
	switch strings.ToLower(h.Getenv("SENCLAW_NOTIFICATIONS")) {
	case "off", "0", "false", "no":
		notify = false
	}
	shell := desktopShell{window: window, bus: bus, notify: notify, display: display, h: h}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dirs, err := client.FindDirs(h.DataDir, h.Getenv)
	if err != nil {
		fmt.Fprintln(h.Stderr, "senclaw:", err)
		return cli.ExitFailure
	}
	sock := apitype.SocketPath(dirs.Runtime)
	if c := client.DialSocket(sock); c.Ping(ctx, time.Second) == nil {
		// A daemon already runs (the CLI may have started one): show its
		// dashboard and tray rather than refusing to start.
		fmt.Fprintln(h.Stderr, "senclaw: a senclaw daemon is already running; the window and the tray attach to it (Quit leaves it running; `senclaw stop` stops it)")
		return shell.run(ctx, cancel, sock, c, "")
	}
	d, code := newDaemon(h, Options{Listen: listen, FallbackListen: "127.0.0.1:0", WithoutTCPIfSquatted: true, LANFromSettings: true}, false)
	if d == nil {
		return code
	}
	defer d.Close()
	info, err := d.Start(ctx)
	if err != nil {
		fmt.Fprintln(h.Stderr, "senclaw:", err)
		return cli.ExitFailure
	}
	// The window and the tray end with the daemon (senclaw stop), and
	// the daemon with them (Quit).
	go func() { _ = d.Wait(); cancel() }()
	code = shell.run(ctx, cancel, info.Socket, client.DialSocket(info.Socket), info.URL)
	cancel()
	if err := d.Wait(); err != nil {
		fmt.Fprintln(h.Stderr, "senclaw:", err)
		return cli.ExitFailure
	}
	return code
}

// desktopShell is the tray in this process and the window as a child
// process, over the engine's socket.
type desktopShell struct {
	window, bus, display string
	notify               bool
	h                    cli.Host
}

// run shows the tray and the window until ctx ends or the app quits
// (Quit in the tray; closing the window when no tray host shows the
// icon). url is where the dashboard is served over HTTP, if it is.
func (s desktopShell) run(ctx context.Context, quit context.CancelFunc, sock string, c *client.Client, url string) int {
	logger, stderr := s.h.Logger, s.h.Stderr
	var hasTray bool // set before the first window starts
	win := &desktop.WindowProcess{
		Logger: logger,
		Command: func() *exec.Cmd {
			args := []string{"--socket", sock}
			if logger.Enabled(ctx, slog.LevelDebug) {
				args = append([]string{"-v"}, args...)
			}
			cmd := exec.Command(s.window, args...)
			cmd.Stdout, cmd.Stderr = stderr, stderr
			cmd.SysProcAttr = windowProcAttr()
			return cmd
		},
		Exited: func(code int) {
			switch {
			case code == desktop.ExitNoDisplay:
				where := "over the Unix socket " + sock
				if url != "" {
					where = "at " + url
				}
				fmt.Fprintf(stderr, "senclaw: GTK could not open the display %q, so no window; the dashboard is served %s instead (open it with `senclaw open`).\n", s.display, where)
			case !hasTray:
				quit()
			default:
				logger.Info("The window is closed; the tray keeps SenClaw running (Open dashboard brings the window back).")
			}
		},
	}
	trayHost := desktop.TrayHostPresent(s.bus)
	stopTray, trayErr := desktop.StartTray(ctx, desktop.TrayOptions{
		Client: c, BusAddress: s.bus, Notifications: s.notify, Logger: logger,
		OpenDashboard: func() {
			if err := win.Show(); err != nil {
				logger.Warn("Could not show the window.", "err", err)
			}
		},
		OpenDashboardAt: func(anchor string) {
			if err := win.ShowAt(anchor); err != nil {
				logger.Warn("Could not show the window.", "err", err)
			}
		},
		Quit: quit,
	})
	hasTray = trayErr == nil && trayHost
	switch {
	case trayErr != nil:
		logger.Warn("No tray icon: the window stays the only way in; closing it quits the app (SIGTERM or `senclaw stop` otherwise).", "err", trayErr)
	case !trayHost:
		logger.Warn("No tray host (StatusNotifierWatcher) on the session bus: the tray icon shows nowhere, so closing the window quits the app.")
	}
	if err := win.Show(); err != nil {
		fmt.Fprintln(stderr, "senclaw: starting the window:", err)
	}
	<-ctx.Done()
	win.Stop()
	stopTray()
	return 0
}

// findWindow finds senclaw-window, the dashboard window's executable:
// next to this one (a clone's build), or in ../lib/senclaw beside it
// (where make install and the Debian package put it); "" when there is
// none.
func findWindow() string {
	self := selfPath()
	if self == "" {
		return ""
	}
	dir := filepath.Dir(self)
	for _, p := range []string{filepath.Join(dir, "senclaw-window"), filepath.Join(dir, "..", "lib", "senclaw", "senclaw-window")} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return filepath.Clean(p)
		}
	}
	return ""
}
