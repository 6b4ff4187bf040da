//go:build desktop

package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
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
// `senclaw serve` does: lock, token, socket, loopback TCP), the dashboard
// window and the tray. Without a display it says so and serves the
// dashboard over HTTP instead.
func runDesktop(ctx context.Context, opts app.Options, logger *slog.Logger, stdout, stderr io.Writer) int {
	display := firstNonEmpty(os.Getenv("WAYLAND_DISPLAY"), os.Getenv("DISPLAY"))
	if display == "" {
		fmt.Fprintln(stderr, "senclaw: no display (DISPLAY and WAYLAND_DISPLAY are unset), so no window and no tray; serving the dashboard over HTTP instead (open it with `senclaw url`).")
		return serve(ctx, opts, desktopListenArgs(), logger, stdout, stderr)
	}
	bus := desktop.SessionBusAddress(os.Getenv, os.Getuid())
	if bus != "" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		// systray dials the bus named by the environment.
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
		return attachDesktop(ctx, sock, c, bus, notify, logger, stderr)
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
				protectAPIPort(engine, info.URL)
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

	err := desktop.Run(ctx, desktop.Options{
		Handler: srv,
		Icon:    appIcon,
		Logger:  logger,
		Tray: desktop.TrayOptions{
			Client:        client.DialSocket(info.Socket),
			BusAddress:    bus,
			Notifications: notify,
			Logger:        logger,
		},
	})
	switch {
	case errors.Is(err, desktop.ErrNoDisplay):
		fmt.Fprintf(stderr, "senclaw: GTK could not open the display %q, so no window and no tray; the dashboard is served at %s instead (open it with `senclaw url`).\n", display, info.URL)
		<-ctx.Done()
	case err != nil:
		fmt.Fprintln(stderr, "senclaw:", err)
		cancel()
		<-served
		return cli.ExitFailure
	}
	cancel()
	if err := <-served; err != nil {
		fmt.Fprintln(stderr, "senclaw:", err)
		return cli.ExitFailure
	}
	return 0
}

// attachDesktop runs the window and the tray for a daemon that is already
// running: the window's requests go to the daemon's owner-only socket.
func attachDesktop(ctx context.Context, sock string, c *client.Client, bus string, notify bool, logger *slog.Logger, stderr io.Writer) int {
	target, _ := url.Parse("http://senclaw")
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}},
	}
	err := desktop.Run(ctx, desktop.Options{
		Handler: proxy,
		Icon:    appIcon,
		Logger:  logger,
		Tray:    desktop.TrayOptions{Client: c, BusAddress: bus, Notifications: notify, Logger: logger},
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "senclaw:", err)
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

func desktopListenArgs() []string { return []string{"--listen", desktopListen()} }
