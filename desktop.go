//go:build desktop

package main

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/desktop"
)

//go:embed build/appicon.png
var appIcon []byte

// runDesktop runs `senclaw` with no subcommand: the engine and its API (as
// `senclaw serve` does: lock, token, socket, loopback TCP) and the tray in
// this process, and the dashboard window in a process of its own
// (`senclaw window`), which exists only while the window is open. Without
// a display it says so and serves the dashboard over HTTP instead.
func runDesktop(ctx context.Context, opts app.Options, logger *slog.Logger, stdout, stderr io.Writer) int {
	display := firstNonEmpty(os.Getenv("WAYLAND_DISPLAY"), os.Getenv("DISPLAY"))
	if display == "" {
		fmt.Fprintln(stderr, "senclaw: no display (DISPLAY and WAYLAND_DISPLAY are unset), so no window and no tray; serving the dashboard over HTTP instead (open it with `senclaw url`).")
		return serve(ctx, opts, serveFlags{listen: desktopListen(), listenGiven: true}, logger, stdout, stderr)
	}
	bus := desktop.SessionBusAddress(os.Getenv, os.Getuid())
	if bus != "" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		// systray, and the window process, dial the bus named by the
		// environment.
		os.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)
	}
	notify := true
	switch strings.ToLower(os.Getenv("SENCLAW_NOTIFICATIONS")) {
	case "off", "0", "false", "no":
		notify = false
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sock := api.SocketPath(opts.RuntimeDir)
	if c := client.DialSocket(sock); c.Ping(ctx, time.Second) == nil {
		// A daemon already runs (the CLI may have started one): show its
		// dashboard and tray rather than refusing to start.
		fmt.Fprintln(stderr, "senclaw: a senclaw daemon is already running; the window and the tray attach to it (Quit leaves it running; `senclaw stop` stops it)")
		return desktopShell(ctx, cancel, sock, c, bus, notify, "", logger, stderr)
	}
	srv, engine, release, code := hostEngine(ctx, cancel, opts, logger, stderr)
	if srv == nil {
		return code
	}
	defer release()

	ready := make(chan api.DaemonInfo, 1)
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(ctx, api.DaemonOptions{
			RuntimeDir: opts.RuntimeDir, Listen: desktopListen(), FallbackListen: "127.0.0.1:0",
			Ready: func(info api.DaemonInfo) {
				apiReady(srv, engine, info.URL)
				if info.URL != "" {
					fmt.Fprintf(stdout, "listening on %s\n", info.URL)
				}
				fmt.Fprintf(stdout, "socket %s\n", info.Socket)
				ready <- info
			},
		})
	}()
	var info api.DaemonInfo
	select {
	case info = <-ready:
	case err := <-served:
		fmt.Fprintln(stderr, "senclaw:", err)
		return cli.ExitFailure
	}
	code = desktopShell(ctx, cancel, info.Socket, client.DialSocket(info.Socket), bus, notify, info.URL, logger, stderr)
	cancel()
	if err := <-served; err != nil {
		fmt.Fprintln(stderr, "senclaw:", err)
		return cli.ExitFailure
	}
	return code
}

// desktopShell runs the tray in this process and the window as a child
// process over the engine's socket, until ctx ends or the app quits
// (Quit in the tray; closing the window when no tray host shows the
// icon). url is where the dashboard is served over HTTP, if it is.
func desktopShell(ctx context.Context, quit context.CancelFunc, sock string, c *client.Client, bus string, notify bool, url string, logger *slog.Logger, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "senclaw: finding this program to start the window:", err)
		return cli.ExitFailure
	}
	var hasTray bool // set before the first window starts
	win := &desktop.WindowProcess{
		Logger: logger,
		Command: func() *exec.Cmd {
			args := []string{"window", "--socket", sock}
			if logger.Enabled(ctx, slog.LevelDebug) {
				args = append([]string{"-v"}, args...)
			}
			cmd := exec.Command(exe, args...)
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
				fmt.Fprintf(stderr, "senclaw: GTK could not open the display %q, so no window; the dashboard is served %s instead (open it with `senclaw url`).\n", firstNonEmpty(os.Getenv("WAYLAND_DISPLAY"), os.Getenv("DISPLAY")), where)
			case !hasTray:
				quit()
			default:
				logger.Info("The window is closed; the tray keeps SenClaw running (Open dashboard brings the window back).")
			}
		},
	}
	trayHost := desktop.TrayHostPresent(bus)
	stopTray, trayErr := desktop.StartTray(ctx, desktop.TrayOptions{
		Client: c, BusAddress: bus, Notifications: notify, Logger: logger,
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

// runWindow is `senclaw window --socket PATH`, started by the desktop app:
// the dashboard window alone, its requests sent to the engine's owner-only
// Unix socket. It ends when the window closes or the app's main process
// ends; a byte on desktop.ShowFD brings the window to the front. It exits
// with desktop.ExitNoDisplay when GTK cannot open the display.
func runWindow(ctx context.Context, args []string, logger *slog.Logger, stderr io.Writer) int {
	fs := flag.NewFlagSet("window", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("socket", "", "the engine's Unix socket")
	if err := fs.Parse(args); err != nil || *sock == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: senclaw window --socket PATH (the desktop app starts it)")
		return cli.ExitUsage
	}
	target, _ := url.Parse("http://senclaw")
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", *sock)
		}},
	}
	// The app's main process asks for the window on the show pipe, and
	// closes it when it ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	show := make(chan struct{}, 1)
	goTo := make(chan string, 1)
	var st syscall.Stat_t
	if syscall.Fstat(desktop.ShowFD, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO {
		f := os.NewFile(desktop.ShowFD, "show")
		go func() {
			defer cancel()
			lines := bufio.NewScanner(f)
			for lines.Scan() {
				if anchor, ok := strings.CutPrefix(lines.Text(), "#"); ok && anchor != "" {
					select {
					case goTo <- anchor:
					default:
					}
					continue
				}
				select {
				case show <- struct{}{}:
				default:
				}
			}
		}()
	}
	err := desktop.RunWindow(ctx, desktop.WindowOptions{
		Handler: desktop.InprocHandler(proxy),
		Show:    show,
		GoTo:    goTo,
		Icon:    appIcon,
		Logger:  logger,
	})
	switch {
	case errors.Is(err, desktop.ErrNoDisplay):
		return desktop.ExitNoDisplay
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "senclaw window:", err)
		return cli.ExitFailure
	}
	return 0
}

// desktopListen is the dashboard's TCP address: SENCLAW_LISTEN, or the
// default of `senclaw serve`.
func desktopListen() string {
	if l, ok := os.LookupEnv("SENCLAW_LISTEN"); ok {
		return l
	}
	return "127.0.0.1:7878"
}
