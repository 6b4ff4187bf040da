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
	"github.com/senclaw/sandbox/internal/testutil"
)

// dockerTestImage is built offline by scripts/docker-test-image.sh.
const dockerTestImage = "senclaw-test/busybox:latest"

// TestNetworkRulesHoldUnderDocker: a Docker sandbox has network mode none;
// busybox's wget reaches the "remote" server through the proxy, never this
// machine's services, and a listen port is forwarded to 127.0.0.1.
func TestNetworkRulesHoldUnderDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: Docker containers through the proxy (about 12 s); make test-go runs it")
	}
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
	listen := testutil.FreePort(t)
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
	if got := hostAnswer(listen, "hello\n", 15*time.Second); got != "hello\n" {
		t.Errorf("the listen port did not answer on 127.0.0.1 (run %+v): %q", res.Record, got)
	}
	// The container's runs overlap: the background run's forwarder holds
	// the proxy ports, and a run beside it finds them too, also once the
	// background run is gone.
	remote := viaProxy(fmt.Sprintf("http://example.test:%d/beside", f.remote))
	if out := g.sh(t, sb.ID, remote); !strings.Contains(out, "remote-ok /beside") {
		t.Errorf("a run beside a background run did not reach the proxy:\n%s", out)
	}
	started := make(chan struct{})
	done := make(chan string, 1)
	go func() {
		close(started)
		done <- g.sh(t, sb.ID, "sleep 2; "+viaProxy(fmt.Sprintf("http://example.test:%d/outlived", f.remote)))
	}()
	<-started
	time.Sleep(500 * time.Millisecond)
	// End the background run: its shell, and with it its forwarder.
	killed := false
	if st, err := e.Stats(ctx, sb.ID); err == nil {
		for _, p := range st.Processes {
			if strings.Contains(p.Command, "echo hello") && !strings.Contains(p.Command, "senclaw-netfwd") {
				if _, err := e.Kill(ctx, sb.ID, p.Pid); err == nil {
					killed = true
				}
			}
		}
	}
	if !killed {
		t.Errorf("could not find and kill the background run's shell")
	}
	if out := <-done; !strings.Contains(out, "remote-ok /outlived") {
		t.Errorf("a run that outlived the background run lost the proxy:\n%s", out)
	}
	// The listen port's forward outlives the run that opened it: a short
	// run holds it when a server starts beside it, and the server's own
	// run takes it over once the short one ends.
	short := make(chan string, 1)
	go func() { short <- g.sh(t, sb.ID, "sleep 3") }()
	time.Sleep(500 * time.Millisecond)
	if _, err := e.Exec(ctx, sb.ID, RunRequest{Command: fmt.Sprintf("while :; do echo again | nc -l -p %d 127.0.0.1; done", listen), Background: true}); err != nil {
		t.Fatal(err)
	}
	if got := hostAnswer(listen, "again\n", 10*time.Second); got != "again\n" {
		t.Errorf("the server beside a short run did not answer on 127.0.0.1: %q", got)
	}
	<-short
	time.Sleep(time.Second)
	if got := hostAnswer(listen, "again\n", 10*time.Second); got != "again\n" {
		t.Errorf("the listen port stopped answering when the run that opened its forward ended: %q", got)
	}
	st, err := e.Stats(ctx, sb.ID)
	if err != nil || st.Denied == 0 {
		t.Errorf("denials not counted: %+v %v", st, err)
	}
}

// hostAnswer connects to 127.0.0.1:port on the host until it reads want
// or d passes, and returns what it read last.
func hostAnswer(port int, want string, d time.Duration) string {
	var got string
	for deadline := time.Now().Add(d); time.Now().Before(deadline) && got != want; time.Sleep(100 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			continue
		}
		buf := make([]byte, 16)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, _ := c.Read(buf)
		got = string(buf[:n])
		c.Close()
	}
	return got
}

// TestDockerSandboxesTrustTheEnginesCA: a Docker sandbox with network
// gets what a bwrap one gets: the CA bundle bound in (this machine's
// roots and the engine's CA) with the TLS clients' variables pointing at
// it, and a secret's placeholder, never its value.
func TestDockerSandboxesTrustTheEnginesCA(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a Docker container; make test-go runs it")
	}
	t.Parallel()
	b := docker.New(docker.Options{DefaultImage: dockerTestImage, Owner: "senclaw-test-ca-" + randomHex(4), PoolSize: -1})
	ctx := context.Background()
	if c := b.Probe(ctx); !c.Usable() {
		testutil.Need(t, "docker: "+c.Reason)
	}
	t.Cleanup(func() { b.Close() })
	e := newTestEngine(t, []backends.Backend{b})
	s := e.Settings()
	s.DefaultImage = dockerTestImage
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	const value = "docker-secret-value-never-inside"
	if _, err := e.AddSecret(SecretSpec{Name: "gh", Hosts: []string{"api.github.com"}}, []byte(value)); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("docker"), Network: ptr(true), Secrets: []string{"gh"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Delete(context.Background(), sb.ID, true) })
	g := &netFixture{e: e}
	out := g.sh(t, sb.ID, `echo "vars:$SSL_CERT_FILE $REQUESTS_CA_BUNDLE $NODE_EXTRA_CA_CERTS $PIP_CERT $CURL_CA_BUNDLE $GIT_SSL_CAINFO"
echo "certs:$(grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE")"
echo "gh:$GH"
sed -n '/SenClaw Sandbox proxy CA/,$p' "$SSL_CERT_FILE" | tail -n +2 > /tmp/ca.pem; cat /tmp/ca.pem`)
	if !strings.Contains(out, "vars:"+strings.TrimSpace(strings.Repeat(CABundlePath+" ", 6))+"\n") {
		t.Errorf("the CA variables in the container:\n%s", out)
	}
	ca, err := e.ca.CertPEM()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, string(ca)) || strings.Contains(out, "certs:0\n") || strings.Contains(out, "certs:1\n") {
		t.Errorf("the bundle in the container is not this machine's roots and the engine's CA:\n%s", out)
	}
	if !strings.Contains(out, "gh:<senclaw-secret:gh:") || strings.Contains(out, value) {
		t.Errorf("the secret in the container:\n%s", out)
	}
}
