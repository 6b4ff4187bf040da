package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker"
)

// dockerTestImage is built offline by scripts/docker-test-image.sh.
const dockerTestImage = "senclaw-test/busybox:latest"

// TestNetworkRulesHoldUnderDocker: a Docker sandbox has network mode none;
// busybox's wget reaches the "remote" server through the proxy, never this
// machine's services, and a listen port is forwarded to 127.0.0.1.
func TestNetworkRulesHoldUnderDocker(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t) // for its servers and resolver
	root := testDir(t)
	b := docker.New(docker.Options{DefaultImage: dockerTestImage, Owner: "senclaw-test-net-" + randomHex(4), PoolSize: -1})
	ctx := context.Background()
	if c := b.Probe(ctx); !c.Usable() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker is required under CI: %s", c.Reason)
		}
		t.Skipf("docker: %s", c.Reason)
	}
	t.Cleanup(func() { b.Close() })
	e := newTestEngine(t, []backends.Backend{b}, func(o *Options) {
		o.DataDir = root + "/data"
		o.NetResolve, o.NetTreatAsRemote = f.e.opts.NetResolve, f.e.opts.NetTreatAsRemote
	})
	s := e.Settings()
	s.DefaultImage = dockerTestImage
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	listen := freeTCPPort(t)
	sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("docker"), Network: ptr(true), Listen: []int{listen}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Delete(context.Background(), sb.ID, true) })
	g := &netFixture{e: e}
	// busybox nc as the client (the static busybox's wget crashes on
	// name lookups): an absolute-form request to the proxy, and a direct
	// connection.
	viaProxy := func(url string) string {
		return fmt.Sprintf(`printf 'GET %s HTTP/1.0\r\n\r\n' | nc -w 10 127.0.0.1 3128; echo`, url)
	}
	out := g.sh(t, sb.ID, strings.Join([]string{
		viaProxy(fmt.Sprintf("http://example.test:%d/docker", f.remote)),
		viaProxy(fmt.Sprintf("http://127.0.0.1:%d/", f.local)),
		fmt.Sprintf("printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 127.0.0.1 %d || echo direct-failed", f.local),
		"ls /sys/class/net",
	}, "\n"))
	if !strings.Contains(out, "remote-ok /docker") {
		t.Errorf("the remote server was not reached through the proxy:\n%s", out)
	}
	if strings.Contains(out, "local-ok") || !strings.Contains(out, "403") {
		t.Errorf("this machine's service was reached, or not refused with 403:\n%s", out)
	}
	// The status check sees the container as the run made it (the network
	// plumbing is part of its shape), not as needing a recreate.
	e.forgetStatus(sb.ID)
	if got, _ := e.Get(sb.ID); got.Container != backends.StatusRunning {
		t.Errorf("container status after a run: %q, want %q", got.Container, backends.StatusRunning)
	}
	if strings.Contains(out, "eth0") {
		t.Errorf("the container has a network interface:\n%s", out)
	}
	// A listen port: a server in the container answers on the host's
	// 127.0.0.1, through the engine's forwarding (nothing is published).
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: fmt.Sprintf("while :; do echo hello | nc -l -p %d 127.0.0.1; done", listen), Background: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Kill(ctx, sb.ID, 0)
	var got string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && got != "hello\n"; time.Sleep(100 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", listen), time.Second)
		if err != nil {
			continue
		}
		buf := make([]byte, 16)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, _ := c.Read(buf)
		got = string(buf[:n])
		c.Close()
	}
	if got != "hello\n" {
		t.Errorf("the listen port did not answer on 127.0.0.1 (run %+v): %q", res.Record, got)
	}
	st, err := e.Stats(ctx, sb.ID)
	if err != nil || st.Denied == 0 {
		t.Errorf("denials not counted: %+v %v", st, err)
	}
}
