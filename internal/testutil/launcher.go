package testutil

import (
	"os"
	"testing"

	"github.com/senclaw/sandbox/backends/envexec"
	"github.com/senclaw/sandbox/backends/idmap"
)

// Main is TestMain for a package whose tests start traced direct runs or
// runs with idmapped mounts: the test binary is then the envexec launcher
// or the idmap launcher (Launcher), as the senclaw executable is in
// production.
func Main(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == envexec.Arg {
		os.Exit(envexec.Main(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == idmap.Arg {
		os.Exit(idmap.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
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
