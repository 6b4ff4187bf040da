package daemon

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/seatbelt"
)

// nativeBackends are this OS's own sandboxes, preferred over the rest:
// Seatbelt on macOS.
func nativeBackends(home string, logger *slog.Logger) []backends.Backend {
	cache, _ := os.UserCacheDir()
	if cache == "" && home != "" {
		cache = filepath.Join(home, "Library", "Caches")
	}
	return []backends.Backend{seatbelt.New(seatbelt.Options{Logger: logger, Home: home, CacheDir: cache, TempRoot: os.TempDir()})}
}
