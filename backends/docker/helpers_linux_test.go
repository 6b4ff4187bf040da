package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// testImage is built offline from the host's static busybox, the same way
// scripts/docker-test-image.sh builds it.
const testImage = "senclaw-test/busybox:latest"

var (
	daemonOnce sync.Once
	daemonErr  error
	sysprobe   struct {
		once sync.Once
		path string
		err  error
	}
)

// requireDocker skips when no daemon answers at the default socket, except
// under CI=true, where that is a failure: CI must not go green by skipping.
// It makes sure the test image exists.
func requireDocker(t testing.TB) {
	t.Helper()
	daemonOnce.Do(func() {
		cli, err := client.NewClientWithOpts(client.WithHost(client.DefaultDockerHost), client.WithAPIVersionNegotiation())
		if err != nil {
			daemonErr = err
			return
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, daemonErr = cli.Ping(pctx)
		pcancel()
		if daemonErr == nil {
			daemonErr = ensureTestImage(ctx, cli)
		}
	})
	if daemonErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a docker daemon is required under CI (run scripts/docker-test-image.sh): %v", daemonErr)
		}
		t.Skipf("no docker daemon (run scripts/docker-test-image.sh): %v", daemonErr)
	}
}

// ensureTestImage imports a busybox rootfs as testImage when missing.
func ensureTestImage(ctx context.Context, cli *client.Client) error {
	if _, err := cli.ImageInspect(ctx, testImage); err == nil {
		return nil
	}
	return importBusybox(ctx, cli, testImage, nil)
}

// importBusybox imports a busybox rootfs, with what extra writes into it,
// as the image tag.
func importBusybox(ctx context.Context, cli *client.Client, tag string, extra func(*tar.Writer)) error {
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return err
	}
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin", "etc", "proc", "sys", "dev", "work"} {
		_ = tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	_ = tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	_ = tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin))})
	_, _ = tw.Write(bin)
	for _, a := range strings.Fields(string(list)) {
		if a != "busybox" {
			_ = tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox"})
		}
	}
	for name, body := range map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/work:/bin/sh\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		_, _ = tw.Write([]byte(body))
	}
	if extra != nil {
		extra(tw)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, tag, image.ImportOptions{Changes: []string{"ENV PATH=/bin"}})
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// newTestBackend is a backend on the default socket with the test image,
// a pool directory and a logger into the test's output; it is closed at
// the end of the test.
func newTestBackend(t testing.TB, edit func(*Options)) *Backend {
	t.Helper()
	opts := Options{
		DefaultImage: testImage,
		Owner:        "test-" + randomHex(4),
		PoolDir:      filepath.Join(testBase(t), "pool"),
		Logger:       slog.New(slog.NewTextHandler(t.Output(), nil)),
	}
	if edit != nil {
		edit(&opts)
	}
	b := New(opts)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// testBase is a fresh directory under the system temp dir that the
// sandbox user can walk through.
func testBase(t testing.TB) string {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	return base
}

// newWorkspace makes a workspace owned by the sandbox user.
func newWorkspace(t testing.TB, base string) string {
	t.Helper()
	ws := filepath.Join(base, "ws-"+randomHex(3))
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return ws
}

// newSpec is a persistent sandbox spec with its own id and workspace,
// whose container is removed at the end of the test.
func newSpec(t testing.TB, b *Backend, argv ...string) *backends.Spec {
	t.Helper()
	id := "t" + randomHex(4)
	t.Cleanup(func() { _ = b.RemoveSandbox(context.Background(), id) })
	return &backends.Spec{
		SandboxID: id,
		RunID:     "r" + randomHex(3),
		Workspace: newWorkspace(t, testBase(t)),
		Argv:      argv,
		Env:       []string{"PATH=/bin:/usr/bin"},
		FsMode:    backends.FsStrict,
		Limits:    backends.Limits{CPUs: 1, MemoryMB: 256, Pids: 128, DiskMB: 50},
		User:      &backends.Credential{UID: nobody, GID: nobody},
	}
}

// result is a finished run.
type result struct {
	stdout, stderr string
	status         backends.ExitStatus
	proc           *process
}

// run starts spec with a new run id and waits for it.
func run(t testing.TB, b *Backend, spec *backends.Spec, argv ...string) result {
	t.Helper()
	s := *spec
	s.RunID = "r" + randomHex(3)
	if len(argv) > 0 {
		s.Argv = argv
	}
	var out, errOut testutil.SyncBuffer
	s.Stdout, s.Stderr = &out, &errOut
	p, err := b.Start(context.Background(), &s)
	if err != nil {
		t.Fatalf("start %q: %v", s.Argv, err)
	}
	st, err := p.Wait()
	if err != nil {
		t.Fatalf("wait %q: %v", s.Argv, err)
	}
	return result{stdout: out.String(), stderr: errOut.String(), status: st, proc: p.(*process)}
}

// sysprobePath builds testdata/sysprobe, a static binary that tries
// system calls the sandbox must deny.
func sysprobePath(t testing.TB) string {
	t.Helper()
	sysprobe.once.Do(func() {
		dir, err := os.MkdirTemp("", "sysprobe")
		if err != nil {
			sysprobe.err = err
			return
		}
		sysprobe.path = filepath.Join(dir, "sysprobe")
		cmd := exec.Command("go", "build", "-o", sysprobe.path, "./testdata/sysprobe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			sysprobe.err = err
			sysprobe.path = string(out)
		}
	})
	if sysprobe.err != nil {
		t.Fatalf("building sysprobe: %v\n%s", sysprobe.err, sysprobe.path)
	}
	return sysprobe.path
}

// testClient is a client of the default daemon, for checks from outside
// the backend.
func testClient(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.WithHost(client.DefaultDockerHost), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sysprobe.path != "" && sysprobe.err == nil {
		_ = os.RemoveAll(filepath.Dir(sysprobe.path))
	}
	os.Exit(code)
}
