package testutil

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// RemoteDocker is a second Docker daemon on this machine that stands in
// for one on another machine (scripts/docker-remote.sh): TLS on
// 127.0.0.1 only, its own data and exec roots, no bridge, and a mount
// namespace of its own in which /tmp (the tests' engine dirs) and the
// other homes of engines do not exist.
type RemoteDocker struct {
	// Host is its tcp:// address.
	Host string
	// CACert, Cert and Key are the client's TLS material (the client
	// verifies the daemon with the CA; the daemon the client's cert).
	CACert, Cert, Key string
	state             string
}

// script is scripts/docker-remote.sh of this repository.
func script() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "scripts", "docker-remote.sh")
}

const sharedRemote = "/var/tmp/senclaw-remote-docker"

// Remote is the shared second daemon (scripts/docker-remote.sh start,
// which make test-deps runs). Without it the test skips, and fails
// under CI=true.
func Remote(t testing.TB) RemoteDocker {
	t.Helper()
	state := os.Getenv("SENCLAW_REMOTE_DOCKER")
	if state == "" {
		state = sharedRemote
	}
	r, err := readRemote(state)
	if err == nil && !r.answers() {
		err = os.ErrNotExist
	}
	if err != nil {
		Need(t, "the second Docker daemon of scripts/docker-remote.sh (run `scripts/docker-remote.sh start`, as make test-deps does): "+err.Error())
	}
	return r
}

// PrivateRemote starts a second daemon of the test's own, for a test
// that kills and restarts it (the shared one serves other tests at the
// same time), and stops it at the end of the test.
func PrivateRemote(t testing.TB) RemoteDocker {
	t.Helper()
	RequireRoot(t)
	if _, err := exec.LookPath("dockerd"); err != nil {
		Need(t, "dockerd, for a second Docker daemon (scripts/docker-test-image.sh installs it)")
	}
	state, err := os.MkdirTemp("/var/tmp", "senclaw-remote-")
	if err != nil {
		t.Fatal(err)
	}
	r := RemoteDocker{state: state}
	t.Cleanup(func() {
		r.run(t, "stop")
		_ = os.RemoveAll(state)
	})
	r.run(t, "start")
	r2, err := readRemote(state)
	if err != nil {
		t.Fatal(err)
	}
	r2.state = state
	return r2
}

// Kill kills the daemon at once, as a machine dropping off would.
func (r RemoteDocker) Kill(t testing.TB) { t.Helper(); r.run(t, "kill") }

// Restart starts it again after Kill, with its data and certificates.
func (r RemoteDocker) Restart(t testing.TB) { t.Helper(); r.run(t, "restart") }

func (r RemoteDocker) run(t testing.TB, verb string) {
	t.Helper()
	cmd := exec.Command(script(), verb)
	cmd.Env = append(os.Environ(), "SENCLAW_REMOTE_DOCKER="+r.state, "SKIP_APT=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/docker-remote.sh %s: %v\n%s", verb, err, out)
	}
}

func readRemote(state string) (RemoteDocker, error) {
	f, err := os.Open(filepath.Join(state, "env"))
	if err != nil {
		return RemoteDocker{}, err
	}
	defer f.Close()
	r := RemoteDocker{state: state}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "DOCKER_HOST":
			r.Host = v
		case "DOCKER_CERT_PATH":
			r.CACert, r.Cert, r.Key = filepath.Join(v, "ca.pem"), filepath.Join(v, "cert.pem"), filepath.Join(v, "key.pem")
		}
	}
	if r.Host == "" || r.CACert == "" {
		return r, os.ErrNotExist
	}
	return r, nil
}

// answers reports whether something listens at the daemon's address.
func (r RemoteDocker) answers() bool {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(r.Host, "tcp://"), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Docker is the docker command line against the daemon, with its TLS
// material.
func (r RemoteDocker) Docker(args ...string) *exec.Cmd {
	return exec.Command("docker", append([]string{"-H", r.Host, "--tlsverify", "--tlscacert", r.CACert, "--tlscert", r.Cert, "--tlskey", r.Key}, args...)...)
}

// DataRoot is the daemon's data root on this machine: its containers'
// configurations and filesystems, its volumes.
func (r RemoteDocker) DataRoot() string { return filepath.Join(r.state, "data") }
