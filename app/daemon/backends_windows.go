package daemon

import (
	"log/slog"
	"os"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/windows"
)

// nativeBackends are this OS's own sandboxes, preferred over the rest:
// the restricted-token backend on Windows.
func nativeBackends(home string, logger *slog.Logger) []backends.Backend {
	return []backends.Backend{windows.New(windows.Options{Logger: logger, Home: home, TempRoot: os.TempDir()})}
}
