package desktop

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/internal/testutil"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// testRoot is a short directory a sandbox user can traverse: a socket
// path must fit in 108 bytes, and as root the engine runs code as nobody.
func testRoot(t *testing.T) string { return testutil.SandboxDir(t, "scd-") }

// testEngine is an engine with bs and the direct backend, probing on
// every read so that a test's change of a backend shows at once.
func testEngine(t *testing.T, root string, bs ...backends.Backend) *app.Engine {
	t.Helper()
	e, err := app.New(app.Options{
		DataDir: filepath.Join(root, "data"), ConfigDir: filepath.Join(root, "config"), RuntimeDir: filepath.Join(root, "run"),
		HomeDir: filepath.Join(root, "home"), Backends: append(bs, direct.New()), EUID: os.Geteuid(), ProbeTTL: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
