package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/client"
)

// benchDaemon is a senclaw daemon built and started for a benchmark, and
// raw bwrap with the binds and namespaces a strict sandbox gets.
type benchDaemon struct {
	bin    string
	env    []string
	daemon *exec.Cmd
	client *client.Client
	// rawBwrap runs `true` in raw bwrap, as the sandbox user, capturing
	// output like the engine does.
	rawBwrap func() error
}

// startBenchDaemon builds senclaw, starts `senclaw serve` with its own
// directories and waits until it answers; the test's cleanup stops it.
func startBenchDaemon(t *testing.T) *benchDaemon {
	t.Helper()
	bwrapPath, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := os.MkdirTemp("", "senclaw-bench-")
	os.Chmod(root, 0o711)
	t.Cleanup(func() { os.RemoveAll(root) })
	d := &benchDaemon{bin: buildSenclaw(t, root)}
	d.env = append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(root, "run"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"), "SENCLAW_DATA_DIR=")
	d.daemon = exec.Command(d.bin, "--data-dir", filepath.Join(root, "data"), "serve", "--listen", "")
	d.daemon.Env = d.env
	stdout, _ := d.daemon.StdoutPipe()
	if err := d.daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.daemon.Process.Signal(syscall.SIGTERM); d.daemon.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "socket ") {
	}
	d.client = client.DialSocket(api.SocketPath(filepath.Join(root, "run", "senclaw")))
	if err := d.client.Ping(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "raw-ws")
	os.Mkdir(ws, 0o777)
	rawArgs := []string{"--die-with-parent", "--new-session", "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", ws, ws, "--chdir", ws, "--", "true"}
	d.rawBwrap = func() error {
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
	return d
}

// cli runs the senclaw CLI against the daemon, as a person would.
func (d *benchDaemon) cli(args ...string) error {
	cmd := exec.Command(d.bin, args...)
	cmd.Env = d.env
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
