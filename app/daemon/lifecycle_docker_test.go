package daemon

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// daemonProcess is a `senclaw serve` of a built binary, in its own dirs.
type daemonProcess struct {
	t    *testing.T
	bin  string
	data string
	env  []string
	cmd  *exec.Cmd
}

// buildDaemon builds senclaw into a fresh directory and returns how to
// start and drive it.
func buildDaemon(t *testing.T) *daemonProcess {
	t.Helper()
	root := testutil.SandboxDir(t, "senclaw-life-")
	// The CLI calls of a test start a daemon of their own when none
	// answers (after the test's own was stopped or killed): that one too
	// is stopped when the test ends, not left running with its sandboxes
	// made ahead and their mounts.
	testutil.StopDaemonAtCleanup(t, filepath.Join(root, "run", "senclaw"))
	bin := testutil.Senclaw(t)
	for _, d := range []string{"run", "config"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(root, "run"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_DATA_HOME=", "SENCLAW_DATA_DIR=")
	return &daemonProcess{t: t, bin: bin, data: filepath.Join(root, "data"), env: env}
}

// start starts the daemon and waits until its socket answers.
func (d *daemonProcess) start() {
	d.t.Helper()
	d.cmd = exec.Command(d.bin, "--data-dir", d.data, "-v", "serve", "--listen", "")
	d.cmd.Env = d.env
	stdout, _ := d.cmd.StdoutPipe()
	logFile, _ := os.OpenFile(filepath.Join(filepath.Dir(d.data), "serve.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	d.cmd.Stderr = logFile
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	cmd := d.cmd
	d.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "socket ") {
			go func() {
				for sc.Scan() {
				}
			}()
			return
		}
	}
	log, _ := os.ReadFile(logFile.Name())
	d.t.Fatalf("the daemon did not start:\n%s", log)
}

// cli runs a senclaw subcommand against the daemon.
func (d *daemonProcess) cli(args ...string) (int, string) {
	d.t.Helper()
	cmd := exec.Command(d.bin, append([]string{"--data-dir", d.data}, args...)...)
	cmd.Env = d.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		d.t.Fatal(err)
	}
	return 0, out.String()
}

// stopped waits for the daemon's process to end.
func (d *daemonProcess) stopped() {
	d.t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.t.Fatal("the daemon did not stop in 30 s")
	}
}

// containers lists the names of the daemon's Docker containers of kind
// ("" for any), with the docker CLI.
func (d *daemonProcess) containers(kind string) []string {
	d.t.Helper()
	args := []string{"ps", "-a", "--filter", "label=senclaw.owner=" + DockerOwner(d.data), "--format", "{{.Names}}"}
	if kind != "" {
		args = append(args, "--filter", "label=senclaw.kind="+kind)
	}
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		d.t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

func (d *daemonProcess) waitContainers(what string, ok func(names []string) bool) {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok(d.containers("")) {
		if time.Now().After(deadline) {
			d.t.Fatalf("%s: the daemon's containers are %v", what, d.containers(""))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mounts lists what is mounted below the daemon's data dir (workspace
// images, tmpfs workspaces).
func (d *daemonProcess) mounts() []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], d.data+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

func requireDockerCLI(t *testing.T) {
	t.Helper()
	if err := exec.Command("docker", "image", "inspect", "senclaw-test/busybox:latest").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker and the test image are required under CI (scripts/docker-test-image.sh): %v", err)
		}
		t.Skipf("no docker or no test image (scripts/docker-test-image.sh): %v", err)
	}
}

// TestDockerContainersEndWithTheDaemon: through the path users take
// (the CLI, the daemon, the engine, the Docker backend with its warm
// pool), `senclaw stop` and SIGTERM leave no container of the daemon's,
// pool included, and no mount; after the daemon is SIGKILLed with a
// one-shot run going, its container survives the crash and the next
// start removes it, with the mounts it left.
func TestDockerContainersEndWithTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a real daemon's Docker containers through stop, SIGTERM and SIGKILL (about 11 s); make test-go runs it")
	}
	t.Parallel()
	requireDockerCLI(t)
	d := buildDaemon(t)
	t.Cleanup(func() {
		if left := d.containers(""); len(left) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, left...)...).Run()
		}
	})
	image := []string{"--backend", "docker", "--image", "senclaw-test/busybox:latest"}

	d.start()
	if code, out := d.cli(append(append([]string{"run"}, image...), "--", "true")...); code != 0 {
		t.Fatalf("senclaw run --backend docker: %d %s", code, out)
	}
	d.waitContainers("after a one-shot run the pool fills", func(names []string) bool { return len(names) == 2 })
	if code, out := d.cli("stop"); code != 0 {
		t.Fatalf("senclaw stop: %d %s", code, out)
	}
	d.stopped()
	if left := d.containers(""); len(left) > 0 {
		t.Fatalf("after senclaw stop: %v", left)
	}
	if left := d.mounts(); len(left) > 0 {
		t.Fatalf("after senclaw stop, mounts are left: %v", left)
	}

	d.start()
	if code, out := d.cli(append(append([]string{"run", "--background"}, image...), "--", "sleep", "300")...); code != 0 {
		t.Fatalf("senclaw run --background: %d %s", code, out)
	}
	d.waitContainers("a background one-shot runs", func(names []string) bool {
		for _, name := range names {
			if top, _ := exec.Command("docker", "top", name).Output(); bytes.Contains(top, []byte("sleep 300")) {
				return true
			}
		}
		return false
	})
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.stopped()
	if len(d.containers("")) == 0 {
		t.Fatal("the one-shot's container was gone without the daemon: the crash case was not tested")
	}
	d.start()
	d.waitContainers("the next start reconciles what the crashed daemon left", func(names []string) bool { return len(names) == 0 })
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.stopped()
	if left := d.containers(""); len(left) > 0 {
		t.Fatalf("after SIGTERM: %v", left)
	}
	if left := d.mounts(); len(left) > 0 {
		t.Fatalf("after SIGTERM, mounts are left: %v", left)
	}
}

// TestADaemonTheCLIStartedEndsWithTheTest: a CLI call of a test after the
// test's own daemon was killed finds no daemon and starts one of its own,
// detached, of which the test holds no handle (so a fresh-clone CI run
// left one running an hour later, with its sandboxes made ahead and their
// tmpfs mounts). It ends with the test all the same.
func TestADaemonTheCLIStartedEndsWithTheTest(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds senclaw and starts two daemons")
	}
	t.Parallel()
	testutil.RequireBwrap(t)
	var data string
	t.Run("cli_starts_one", func(t *testing.T) {
		d := buildDaemon(t)
		data = d.data
		d.start()
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		d.stopped()
		if code, out := d.cli("ls"); code != 0 {
			t.Fatalf("senclaw ls with no daemon: %d %s", code, out)
		}
		if len(testutil.PidsWith(data)) == 0 {
			t.Fatal("senclaw ls answered, but no daemon of the test's data dir runs")
		}
	})
	testutil.WaitFor(t, 30*time.Second, "the daemon the CLI started to end with its test", func() bool {
		for _, pid := range testutil.PidsWith(data) {
			if comm, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.HasPrefix(string(comm), "senclaw") {
				return false
			}
		}
		return true
	})
}

// TestADaemonThatCannotStartSaysWhy: a command that starts a daemon,
// which ends at once for a reason of its own (here a setting out of
// range), says that reason on stderr and exits 1 at once, rather than
// waiting for a daemon that will never answer.
func TestADaemonThatCannotStartSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	t.Parallel()
	d := buildDaemon(t)
	d.env = append(d.env, "SENCLAW_AHEAD_ONESHOTS=9")
	start := time.Now()
	code, out := d.cli("ls")
	if code != 1 || !strings.Contains(out, `no daemon answers and one could not be started: SENCLAW_AHEAD_ONESHOTS="9": want how many one-shot sandboxes to keep made ahead`) {
		t.Fatalf("senclaw ls: %d %q", code, out)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("it took %v to say so", took)
	}
}
