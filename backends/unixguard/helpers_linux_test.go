package unixguard_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/backends/unixguard"
	"github.com/senclaw/sandbox/internal/testutil"
	"golang.org/x/sys/unix"
)

// requireGuard skips without bwrap or a kernel that can run the guard,
// except under CI=true, where that is a failure.
func requireGuard(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	ok, why := unixguard.Available()
	if err == nil && ok {
		return
	}
	if err != nil {
		why = err.Error()
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the Unix socket guard tests need bwrap and a kernel that can run the guard: %s", why)
	}
	t.Skip(why)
}

var probeBuild = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("SGT_PROBE"); p != "" {
		return p, nil // built by the root test that started this one
	}
	dir, err := os.MkdirTemp("", "sgt-probe-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "probe")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, msg)
	}
	return out, nil
})

// server is a listening Unix socket on the host that counts what it
// accepted and tells each client the uid it saw (SO_PEERCRED).
type server struct {
	path     string
	accepted atomic.Int64
}

func serve(t *testing.T, path string, mode os.FileMode) *server {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	must(t, os.Chmod(path, mode))
	s := &server{path: path}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			uid := -1
			if raw, err := c.(*net.UnixConn).SyscallConn(); err == nil {
				raw.Control(func(fd uintptr) {
					if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
						uid = int(cred.Uid)
					}
				})
			}
			fmt.Fprintf(c, "uid=%d\n", uid)
			c.Close()
		}
	}()
	return s
}

// datagrams is a Unix datagram socket on the host that counts what it
// receives.
func datagrams(t *testing.T, path string) *server {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	must(t, os.Chmod(path, 0o777))
	s := &server{path: path}
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			s.accepted.Add(1)
		}
	}()
	return s
}

// fixture is a workspace with the probe in it, and Unix sockets outside
// it that the sandbox user could connect to on the host: under /var/tmp
// (which open mode shows), under a temp dir of the test, and one the
// policy names.
type fixture struct {
	ws, varDir, tmpDir string
	outside            []*server
	dgram, named       *server
	private            string
}

func newFixture(t *testing.T, u testutil.SandboxUser) *fixture {
	t.Helper()
	probe, err := probeBuild()
	if err != nil {
		t.Fatalf("building the probe: %v", err)
	}
	base := testutil.SandboxDirIn(t, "/tmp", "sgt-")
	varDir := testutil.SandboxDirIn(t, "/var/tmp", "sgt-")
	f := &fixture{ws: filepath.Join(base, "ws"), varDir: varDir, tmpDir: filepath.Join(base, "outside")}
	must(t, os.Mkdir(f.ws, 0o755))
	must(t, os.Mkdir(f.tmpDir, 0o755))
	f.outside = append(f.outside,
		serve(t, filepath.Join(varDir, "out.sock"), 0o777),
		serve(t, filepath.Join(f.tmpDir, "out.sock"), 0o777))
	f.dgram = datagrams(t, filepath.Join(varDir, "dgram.sock"))
	f.outside = append(f.outside, f.dgram)
	f.named = serve(t, filepath.Join(varDir, "named.sock"), 0o777)
	data, err := os.ReadFile(probe)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(f.ws, "probe"), data, 0o755))
	// Links planted in the workspace to the outside.
	must(t, os.Symlink(filepath.Join(varDir, "out.sock"), filepath.Join(f.ws, "link.sock")))
	must(t, os.Symlink(varDir, filepath.Join(f.ws, "linkdir")))
	if os.Geteuid() == 0 {
		// A socket in the workspace that only root may use: the guard
		// must connect as the sandbox user, so this must stay refused.
		f.private = filepath.Join(f.ws, "private.sock")
		serve(t, f.private, 0o600)
		must(t, filepath.Walk(f.ws, func(p string, fi os.FileInfo, err error) error {
			if err != nil || p == f.private {
				return err
			}
			return os.Lchown(p, u.UID(), u.UID())
		}))
	}
	return f
}

// plumbing is a network directory with a stand-in for the engine's proxy
// that answers "proxy" to every connection.
func plumbing(t *testing.T, u testutil.SandboxUser) *backends.NetPlumbing {
	t.Helper()
	dir := filepath.Join(testutil.SandboxDirIn(t, "/tmp", "sgn-"), "net")
	must(t, os.Mkdir(dir, 0o700))
	l, err := net.Listen("unix", filepath.Join(dir, "proxy.sock"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	must(t, os.Chmod(filepath.Join(dir, "proxy.sock"), 0o666))
	if os.Geteuid() == 0 {
		must(t, os.Chown(dir, u.UID(), u.UID()))
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("proxy\n"))
			c.Close()
		}
	}()
	return &backends.NetPlumbing{Dir: dir, Forwarder: netfwdtest.Path(t)}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// spec is a guarded run of the probe with checks in the fixture's
// workspace.
func (f *fixture) spec(t *testing.T, u testutil.SandboxUser, mode backends.FsMode, checks ...string) *backends.Spec {
	return &backends.Spec{
		RunID:          fmt.Sprintf("sgt-%d", time.Now().UnixNano()),
		Workspace:      f.ws,
		WorkspaceExact: true,
		Argv:           append([]string{filepath.Join(f.ws, "probe")}, checks...),
		Env:            []string{"PATH=/usr/bin:/bin", "HOME=" + f.ws},
		FsMode:         mode,
		User:           u.Cred,
		UnixGuard:      &backends.UnixGuard{Forwarder: netfwdtest.Path(t), Sockets: []string{f.named.path}},
	}
}

// run starts spec under bwrap and returns the probe's answers by check.
func run(t *testing.T, spec *backends.Spec) map[string]string {
	t.Helper()
	r := testutil.StartAndWait(t, bwrap.New(bwrap.Options{SandboxUser: spec.User}), spec, 90*time.Second)
	if r.Err != nil || r.Status.Code != 0 {
		t.Fatalf("probe: %+v %v\nstdout: %s\nstderr: %s", r.Status, r.Err, r.Stdout, r.Stderr)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	return got
}

func (f *fixture) noneReachedOutside(t *testing.T) {
	t.Helper()
	for _, s := range f.outside {
		if n := s.accepted.Load(); n != 0 {
			t.Errorf("the outside socket %s accepted %d connections or datagrams from the sandbox", s.path, n)
		}
	}
}
