//go:build desktop

// Command senclaw-window is the desktop app's dashboard window.
//
// It is a process of its own that the app starts (and ends) as the
// window opens and closes, so that the engine never loads GTK or WebKit:
//
//	senclaw-window [-v] --socket PATH
//
// Its requests go to the engine's owner-only Unix socket at PATH. It ends
// when the window closes or the app's main process ends; a line on
// desktop.ShowFD brings the window to the front. It exits with
// desktop.ExitNoDisplay when GTK cannot open the display. Built with cgo
// and -tags desktop,production,webkit2_41 (make build-desktop).
package main

import (
	"bufio"
	"context"
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
	"os/signal"
	"strings"
	"syscall"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/desktop"
	"github.com/senclaw/sandbox/assets"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("senclaw-window", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("socket", "", "the engine's Unix socket")
	verbose := fs.Bool("v", false, "log to stderr")
	if err := fs.Parse(args); err != nil || *sock == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: senclaw-window [-v] --socket PATH (the desktop app starts it)")
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	target, _ := url.Parse("http://senclaw")
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return client.DialUnix(ctx, *sock)
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
		Icon:    assets.AppIcon(),
		Logger:  logger,
	})
	switch {
	case errors.Is(err, desktop.ErrNoDisplay):
		return desktop.ExitNoDisplay
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "senclaw-window:", err)
		return 1
	}
	return 0
}
