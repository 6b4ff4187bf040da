package docker

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestPorts_neverPublished: a container with listen ports has network
// mode none and publishes nothing; the engine forwards its listen ports
// (app's docker network tests reach a server through that).
func TestPorts_neverPublished(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "true")
	spec.Ports.Listen = []int{testutil.FreePort(t)}
	spec.Ports.Connect = []int{443}
	p, err := b.Start(context.Background(), withArgv(spec, "/bin/sh", "-c", "true"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.Wait()
	ins := inspectRaw(t, containerName(spec.SandboxID))
	if ins.HostConfig.NetworkMode != "none" || len(ins.HostConfig.PortBindings) > 0 || len(ins.NetworkSettings.Ports) > 0 {
		t.Errorf("network mode %q, bindings %v, ports %v", ins.HostConfig.NetworkMode, ins.HostConfig.PortBindings, ins.NetworkSettings.Ports)
	}
}

func withArgv(spec *backends.Spec, argv ...string) *backends.Spec {
	s := *spec
	s.Argv = argv
	s.RunID = "r" + randomHex(3)
	return &s
}

// TestDaemon_unreachable points the backend at a socket nobody serves: the
// run fails with a clear error and the probe says "not answering"; a
// daemon that answered before and stops is "seen and gone".
func TestDaemon_unreachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dead := filepath.Join(dir, "dead.sock")
	l, err := net.Listen("unix", dead)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays; nothing answers

	b := New(Options{Host: "unix://" + dead, DefaultImage: testImage})
	spec := &backends.Spec{SandboxID: "dead", RunID: "r", Workspace: dir, Argv: []string{"true"}}
	_, err = b.Start(context.Background(), spec)
	var de *DaemonError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "not answering") || !strings.Contains(err.Error(), "start it") {
		t.Fatalf("start against a dead socket: %v", err)
	}
	c := b.Probe(context.Background())
	if c.State != backends.NeverSeen || c.Details["daemon"] != notAnswering || !strings.Contains(c.Reason, "not answering") || c.Usable() {
		t.Fatalf("probe: %+v", c)
	}

	// Seen, then gone: a proxy to the real daemon that stops.
	requireDocker(t)
	proxy := filepath.Join(dir, "proxy.sock")
	stop := proxyTo(t, proxy, "/var/run/docker.sock")
	b2 := New(Options{Host: "unix://" + proxy})
	if c := b2.Probe(context.Background()); c.State != backends.Healthy || c.Version == "" {
		t.Fatalf("probe through the proxy: %+v", c)
	}
	stop()
	if c := b2.Probe(context.Background()); c.State != backends.SeenGone || c.Details["daemon"] != notAnswering {
		t.Fatalf("probe after the proxy stopped: %+v", c)
	}
}

// proxyTo serves a unix socket that forwards to target, until stop.
func proxyTo(t *testing.T, path, target string) (stop func()) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	stop = func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	t.Cleanup(stop)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { _, _ = copyAll(up, c) }()
			go func() { _, _ = copyAll(c, up) }()
		}
	}()
	return stop
}

func copyAll(dst, src net.Conn) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

// TestImage_missingIsClear: runs never pull, and say how to get the image.
func TestImage_missingIsClear(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "true")
	spec.Image = "senclaw-test/absent:none"
	_, err := b.Start(context.Background(), spec)
	var im *ImageMissingError
	if !errors.As(err, &im) || !strings.Contains(err.Error(), "docker pull senclaw-test/absent:none") {
		t.Fatalf("start with a missing image: %v", err)
	}
	_ = os.Remove(spec.Workspace)
}

// TestSandboxID_notAName: the client cleans a path's . and .. segments
// before it sends it, so the container of sandbox "x/../ID" would be the
// container ID. Every verb refuses such an id, and the container stays.
func TestSandboxID_notAName(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	cli := testClient(t)
	ctx := context.Background()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: testImage, Entrypoint: []string{"/bin/true"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := created.ID
	t.Cleanup(func() { _, _ = cli.ContainerRemove(context.Background(), id, removeForce) })
	b := newTestBackend(t, nil)
	for _, sid := range []string{"x/../" + id, "../" + id, "x/y", ""} {
		if err := b.RemoveSandbox(ctx, sid); err == nil || !strings.Contains(err.Error(), "cannot be part of a container name") {
			t.Errorf("RemoveSandbox(%q): %v", sid, err)
		}
		if err := b.StopSandbox(ctx, sid); err == nil {
			t.Errorf("StopSandbox(%q) succeeded", sid)
		}
		if _, err := b.ContainerTop(ctx, sid); err == nil {
			t.Errorf("ContainerTop(%q) succeeded", sid)
		}
		spec := newSpec(t, b, "true")
		spec.SandboxID = sid
		if _, err := b.Start(ctx, spec); err == nil {
			t.Errorf("Start in sandbox %q succeeded", sid)
		}
	}
	if _, err := inspectName(t, id); err != nil {
		t.Fatalf("the container is gone: %v", err)
	}
}

// TestCopyFromContainer_isAStream: a file tree copied out of a container
// is read as it comes, past the cap of the answers that are decoded.
func TestCopyFromContainer_isAStream(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	cli := testClient(t)
	ctx := context.Background()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: testImage, Entrypoint: []string{"/bin/true"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = cli.ContainerRemove(context.Background(), created.ID, removeForce) })
	res, err := cli.CopyFromContainer(ctx, created.ID, client.CopyFromContainerOptions{SourcePath: "/bin/busybox"})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Content.Close()
	n, err := io.Copy(io.Discard, res.Content)
	if err != nil || n <= maxSmallBody {
		t.Fatalf("copied %d bytes of /bin/busybox (%d in the image): %v", n, res.Stat.Size, err)
	}
}
