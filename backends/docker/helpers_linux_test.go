package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/reexec"
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
		cli, err := newAPIClient(endpoint{Host: defaultHost})
		if err != nil {
			daemonErr = err
			return
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, daemonErr = cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
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
func ensureTestImage(ctx context.Context, cli *apiClient) error {
	if _, err := cli.ImageInspect(ctx, testImage); err == nil {
		return nil
	}
	return importBusybox(ctx, cli, testImage, nil)
}

// importBusybox imports a busybox rootfs, with what extra writes into it,
// as the image tag.
func importBusybox(ctx context.Context, cli *apiClient, tag string, extra func(*tar.Writer)) error {
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
	return importImage(ctx, cli, &buf, tag)
}

// importImage makes the image tag from a root filesystem tarball, with
// PATH=/bin, and waits until the daemon is done.
func importImage(ctx context.Context, cli *apiClient, tarball io.Reader, tag string) error {
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: tarball, SourceName: "-"}, tag, client.ImageImportOptions{Changes: []string{"ENV PATH=/bin"}})
	if err != nil {
		return err
	}
	defer rc.Close()
	// The answer is a stream of JSON progress messages; a failure is one
	// with an error.
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return fmt.Errorf("importing image %s: %s", tag, m.Error)
		}
	}
}

// removeImage removes the image tag, forcibly.
func removeImage(cli *apiClient, tag string) {
	_, _ = cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true})
}

// inspectName is the name of container id, or why it cannot be had.
func inspectName(t testing.TB, id string) (string, error) {
	t.Helper()
	res, err := testClient(t).ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	return strings.TrimPrefix(res.Container.Name, "/"), err
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
func testClient(t testing.TB) *apiClient {
	t.Helper()
	cli, err := newAPIClient(endpoint{Host: defaultHost})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// rawInspect is the part of a container's inspect that tests check, read
// by inspectRaw apart from the backend's client.
type rawInspect struct {
	Name   string
	Config struct {
		User   string
		Labels map[string]string
	}
	HostConfig struct {
		NetworkMode    string
		PortBindings   map[string]any
		ReadonlyRootfs bool
		Privileged     bool
		Init           *bool
		Memory         int64
		MemorySwap     int64
		CapDrop        []string
		SecurityOpt    []string
	}
	NetworkSettings struct {
		Ports map[string]any
	}
}

// inspectRaw inspects a container of the default daemon with a plain
// HTTP client, so that what the daemon applied is read by other code
// than the backend's.
func inspectRaw(t testing.TB, name string) rawInspect {
	t.Helper()
	hc := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", strings.TrimPrefix(defaultHost, "unix://"))
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://docker/containers/" + name + "/json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ins rawInspect
	if err := json.NewDecoder(resp.Body).Decode(&ins); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("inspecting %s: status %d, %v", name, resp.StatusCode, err)
	}
	return ins
}

func TestMain(m *testing.M) {
	reexec.Init()
	code := m.Run()
	if sysprobe.path != "" && sysprobe.err == nil {
		_ = os.RemoveAll(filepath.Dir(sysprobe.path))
	}
	os.Exit(code)
}
