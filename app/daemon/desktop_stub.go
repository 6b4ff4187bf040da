//go:build !linux && !desktop

package daemon

import (
	"context"
	"fmt"

	"github.com/senclaw/sandbox/app/cli"
)

// runDesktop runs `senclaw` with no command in a build without the tray
// (outside Linux the tray needs cgo: build with -tags desktop): there is
// no window or tray to show, so it says so and serves the dashboard over
// HTTP, as `senclaw serve` does.
func runDesktop(ctx context.Context, h cli.Host) int {
	fmt.Fprintln(h.Stderr, "senclaw: this engine was built headless (no window, no tray); serving the dashboard over HTTP instead, as `senclaw serve` does. Build with -tags desktop,production for the desktop app.")
	listen, _ := DefaultListen(h.LookupEnv)
	return serve(ctx, h, cli.ServeOptions{Listen: listen, ListenGiven: true})
}
