// Package netfwdtest builds the senclaw-netfwd forwarder for tests.
//
// The tests of packages whose sandboxes need network use it. The binary is
// cached in the temp dir under a hash of the forwarder's sources and the Go
// version, so a test process builds it at most once and a changed forwarder
// is rebuilt.
package netfwdtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
)

// Path returns the path of a freshly built forwarder in a directory any
// sandbox user can reach, failing t when it cannot be built.
func Path(t testing.TB) string {
	t.Helper()
	once.Do(func() { path, err = build() })
	if err != nil {
		t.Fatalf("building senclaw-netfwd: %v", err)
	}
	return path
}

func build() (string, error) {
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Dir(filepath.Dir(self)) // backends/netfwd
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, glob := range []string{"*.go", "cmd/senclaw-netfwd/*.go", "mux/*.go", "remotefs/*.go", "../backends.go", "../unixguard/*.go"} {
		files, _ := filepath.Glob(filepath.Join(src, glob))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			fmt.Fprintln(h, f)
			h.Write(data)
		}
	}
	dir := filepath.Join(os.TempDir(), "senclaw-netfwd-test-"+hex.EncodeToString(h.Sum(nil)[:8]))
	out := filepath.Join(dir, "senclaw-netfwd")
	if fi, err := os.Stat(out); err == nil && fi.Mode()&0o111 != 0 {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	_ = os.Chmod(dir, 0o755)
	tmp := fmt.Sprintf("%s.%d", out, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/senclaw-netfwd")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, msg)
	}
	return out, os.Rename(tmp, out) // atomic: parallel test binaries may race
}
