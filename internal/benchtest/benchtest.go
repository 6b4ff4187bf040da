// Package benchtest starts what the whole-process benchmarks measure against.
//
// The benchmarks (make bench) time senclaw as people run it, a whole
// process against a real daemon, next to the raw tool it stands on (raw
// bwrap with the binds and namespaces of a strict sandbox) in turns in
// one run, and print the ratio of the medians, as farm-bench does.
package benchtest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/testutil"
)

// Daemon is a senclaw daemon built and started for a benchmark, and raw
// bwrap with the binds and namespaces a strict sandbox gets.
type Daemon struct {
	// Bin is the senclaw executable, Env the environment that points it
	// at this daemon.
	Bin string
	Env []string
	// Cmd is the daemon's process; Client reaches it over its socket.
	Cmd    *exec.Cmd
	Client *client.Client
	// RawBwrap runs `true` in raw bwrap, as the sandbox user, capturing
	// output like the engine does.
	RawBwrap func() error
}

// Start builds senclaw (testutil.Senclaw), starts `senclaw serve` with its
// own directories and waits until it answers; the test's cleanup stops
// it.
func Start(t *testing.T) *Daemon {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal(err)
	}
	root, _ := os.MkdirTemp("", "senclaw-bench-")
	os.Chmod(root, 0o711)
	t.Cleanup(func() { os.RemoveAll(root) })
	testutil.StopDaemonAtCleanup(t, filepath.Join(root, "run", "senclaw"))
	d := &Daemon{Bin: testutil.Senclaw(t)}
	d.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(root, "run"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"), "SENCLAW_DATA_DIR=")
	d.Cmd = exec.Command(d.Bin, "--data-dir", filepath.Join(root, "data"), "serve", "--listen", "")
	d.Cmd.Env = d.Env
	stdout, _ := d.Cmd.StdoutPipe()
	if err := d.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Cmd.Process.Signal(syscall.SIGTERM); d.Cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "socket ") {
	}
	d.Client = client.DialSocket(apitype.SocketPath(filepath.Join(root, "run", "senclaw")))
	if err := d.Client.Ping(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	d.RawBwrap = RawBwrap(t, root)
	return d
}

// RawBwrap is `true` in raw bwrap as a whole process, with the binds and
// namespaces of a strict sandbox, its workspace in root, as the sandbox
// user, its output captured like the engine does.
func RawBwrap(t *testing.T, root string) func() error {
	t.Helper()
	bwrapPath, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "raw-ws")
	os.Mkdir(ws, 0o777)
	rawArgs := []string{"--die-with-parent", "--new-session", "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", ws, ws, "--chdir", ws, "--", "true"}
	return func() error {
		cmd := exec.Command(bwrapPath, rawArgs...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if os.Geteuid() == 0 {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
		}
		return cmd.Run()
	}
}

// CLI runs the senclaw CLI against the daemon, as a person would.
func (d *Daemon) CLI(args ...string) error {
	cmd := exec.Command(d.Bin, args...)
	cmd.Env = d.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &cliError{err, string(out)}
	}
	return nil
}

type cliError struct {
	err error
	out string
}

func (e *cliError) Error() string { return e.err.Error() + ": " + e.out }

// Median is the median of d.
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Installed is the senclaw of the installed layout for the benchmarks
// of the CLI: SENCLAW_INSTALLED when set (an installed package's
// /usr/bin/senclaw, as make test-install gives it), else dir/usr/bin/senclaw
// built here as make deb builds it (CGO off, stripped; senclaw static, the
// engine position-independent), with the engine, the forwarder and the Landlock helper
// in dir/usr/lib/senclaw, where the installed senclaw finds them.
func Installed(t *testing.T, dir string) string {
	t.Helper()
	if p := os.Getenv("SENCLAW_INSTALLED"); p != "" {
		return p
	}
	root := moduleRoot(t)
	for _, b := range []struct{ out, pkg, mode string }{
		{"usr/bin/senclaw", ".", "exe"},
		{"usr/lib/senclaw/senclaw-engine", "./app/daemon/cmd/senclaw-engine", "pie"},
		{"usr/lib/senclaw/senclaw-netfwd", "./backends/netfwd/cmd/senclaw-netfwd", "exe"},
		{"usr/lib/senclaw/senclaw-landlock", "./backends/landlock/cmd/senclaw-landlock", "exe"},
	} {
		build(t, root, filepath.Join(dir, b.out), b.pkg, "-buildmode="+b.mode, "-trimpath", "-ldflags=-s -w")
	}
	return filepath.Join(dir, "usr", "bin", "senclaw")
}

// EmptyProgram builds the Go program that does nothing (func main() {}),
// as the CLI is built, into dir: what a Go process costs at the least.
func EmptyProgram(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "empty-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"go.mod": "module empty\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "empty")
	build(t, src, out, ".", "-trimpath", "-ldflags=-s -w")
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("finding the module: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(gomod)))
}

func build(t *testing.T, dir, out, pkg string, flags ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}
