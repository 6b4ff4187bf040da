package spaceapps

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker"
)

// dockerTestImage is built offline by scripts/docker-test-image.sh.
const dockerTestImage = "senclaw-test/busybox:latest"

// TestTheSameAppUnderDocker: a busybox httpd app runs in a container of
// its own (isolation docker), healthy on its port through the engine's
// forwarding, with its log and banner; a stop ends it gracefully and
// removing the app removes its container.
func TestTheSameAppUnderDocker(t *testing.T) {
	t.Parallel()
	b := docker.New(docker.Options{DefaultImage: dockerTestImage, Owner: "senclaw-test-apps-" + randomHex(4), PoolSize: -1})
	if c := b.Probe(context.Background()); !c.Usable() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker is required under CI: %s", c.Reason)
		}
		t.Skipf("docker: %s", c.Reason)
	}
	t.Cleanup(func() { b.Close() })
	f := newFixture(t, func(o *app.Options, _ *Options) {
		o.Backends = append([]backends.Backend{b}, o.Backends...)
	})
	s := f.e.Settings()
	s.DefaultImage = dockerTestImage
	if _, err := f.e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	manifest := `{"id": "httpd", "name": "Busybox httpd", "runtime": {"start": "mkdir -p www && echo healthy > www/health && echo served > www/index.html && exec httpd -f -p 127.0.0.1:$PORT -h www", "stopTimeoutSec": 5},
	 "requires": {"bin": ["httpd"]}, "sandbox": {"enabled": true, "backend": "docker", "network": "off"}}`
	dir := writeApp(t, manifest, nil)
	f.register(t, dir, false)
	t.Cleanup(func() { _, _ = f.s.Remove(context.Background(), "httpd", true) })
	v := f.start(t, "httpd")
	if v.Sandbox.Isolation != "docker" || v.Sandbox.Backend != "docker" || v.State != StateRunning {
		t.Fatalf("started %+v", v)
	}
	if got := get(t, v.Port, "/"); !strings.Contains(got, "served") {
		t.Fatalf("GET /: %q", got)
	}
	lc, _ := f.s.Logs("httpd", 0)
	if !strings.Contains(lc.Text, "isolation docker (backend docker") {
		t.Fatalf("log %q", lc.Text)
	}
	iso, err := f.s.Isolation(ctx, "httpd")
	if err != nil {
		t.Fatal(err)
	}
	if iso.Isolation != "docker" || len(iso.Limits) == 0 || !strings.Contains(strings.Join(iso.Enforced, "\n"), "network off") {
		t.Fatalf("isolation %+v", iso)
	}
	stopped, err := f.s.Stop(ctx, "httpd")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := f.e.RunsPage(sandboxID("httpd"), app.ListQuery{Limit: 1})
	runs := page.Runs
	if stopped.State != StateStopped || len(runs) != 1 || runs[0].State != "done" || strings.Contains(runs[0].Killed, "killed after the stop timeout") {
		t.Fatalf("stop: %+v, run %+v", stopped, runs)
	}
	if _, err := f.s.Remove(ctx, "httpd", true); err != nil {
		t.Fatal(err)
	}
	if st, err := b.SandboxStatus(ctx, &backends.Spec{SandboxID: sandboxID("httpd")}); err == nil && st != backends.StatusNone {
		t.Fatalf("the app's container is still there after rm: %s", st)
	}
}
