//go:build !desktop

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/senclaw/sandbox/app"
)

// runDesktop runs `senclaw` with no subcommand in a headless build: there
// is no window or tray to show, so it says so and serves the dashboard
// over HTTP, as `senclaw serve` does.
func runDesktop(ctx context.Context, opts app.Options, logger *slog.Logger, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "senclaw: this binary was built headless (no window, no tray); serving the dashboard over HTTP instead, as `senclaw serve` does. Build with -tags desktop,production,webkit2_41 for the desktop app.")
	listen := "127.0.0.1:7878"
	if l, ok := os.LookupEnv("SENCLAW_LISTEN"); ok {
		listen = l
	}
	return serve(ctx, opts, serveFlags{listen: listen, listenGiven: true}, logger, stdout, stderr)
}

// runWindow is `senclaw window`, the desktop app's window process; a
// headless build has none.
func runWindow(_ context.Context, _ []string, _ *slog.Logger, stderr io.Writer) int {
	fmt.Fprintln(stderr, "senclaw window: this binary was built headless (no window); build with -tags desktop,production,webkit2_41")
	return 2
}
