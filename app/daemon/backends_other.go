//go:build !darwin && !windows

package daemon

import (
	"log/slog"

	"github.com/senclaw/sandbox/backends"
)

// nativeBackends are this OS's own sandboxes besides bwrap, Docker and
// Landlock: none here.
func nativeBackends(string, *slog.Logger) []backends.Backend { return nil }
