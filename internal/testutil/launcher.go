package testutil

import (
	"os"
	"testing"

	"github.com/senclaw/sandbox/backends/reexec"
)

// Main is TestMain for a package whose tests start the engine's helpers
// (traced direct runs, idmapped mounts, the direct backend's subreaper,
// the Landlock helper): the test binary is then each helper its code can
// start (Launcher), as the engine's executable is in production. After
// the tests it removes the executables Senclaw built.
func Main(m *testing.M) {
	reexec.Init()
	code := m.Run()
	removeBuilt()
	os.Exit(code)
}

// Launcher is the path of the running test binary, for backends'
// Launcher options; only a package whose TestMain is Main may use it.
func Launcher(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}
