package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// built is the folder Senclaw built the executables into, once per test
// binary; Main removes it when the tests are done.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// Senclaw returns the path of senclaw built from this module, as make
// build leaves it (CGO off): senclaw, with senclaw-engine and
// senclaw-netfwd beside it, where senclaw finds them. They are built once
// per test binary, into a folder every sandbox user can reach; a package
// that uses it has testutil.Main as its TestMain, which removes them.
func Senclaw(t testing.TB) string {
	t.Helper()
	built.once.Do(func() { built.dir, built.err = buildSenclaw() })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "senclaw")
}

func buildSenclaw() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module to build senclaw from: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	dir, err := os.MkdirTemp("", "senclaw-bin-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	for name, pkg := range map[string]string{"senclaw": ".", "senclaw-engine": "./app/daemon/cmd/senclaw-engine", "senclaw-netfwd": "./backends/netfwd/cmd/senclaw-netfwd", "senclaw-landlock": "./backends/landlock/cmd/senclaw-landlock"} {
		// No VCS stamping, as make build: it fails where git cannot read
		// the checkout (another owner's, a .git placeholder).
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return dir, nil
}

// removeBuilt removes what Senclaw built.
func removeBuilt() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
