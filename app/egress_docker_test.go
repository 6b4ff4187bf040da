package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker"
)

// TestDockerSandboxUsesASecretItNeverHolds is
// TestASandboxUsesASecretItNeverHolds for a Docker sandbox. The test
// image (busybox) has no TLS client, so the test builds one,
// testdata/tlsclient, a static Go program that goes through the proxy of
// HTTPS_PROXY and trusts the bundle of SSL_CERT_FILE as any Go program
// does, and puts it in the workspace. Its placeholder, sent in
// Authorization to the secret's host over HTTPS, arrives there as the
// value; sent to another host (HTTPS the proxy looks into, in a header
// and in a body, and plain HTTP) it is refused with the rule named,
// counted and listed in the run's refusals, and that host sees neither.
// The value is in no environment, no output, no file of the container
// (its exported filesystem and the workspace) and no core dump of the
// client that made the request.
func TestDockerSandboxUsesASecretItNeverHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a Docker container and a Go build; make test-go runs it")
	}
	t.Parallel()
	needTools(t, "gcore")
	var owner string
	f := newEgressFixtureOf(t, func(t *testing.T, opts ...engineOpt) *Engine {
		e, o := dockerEngine(t, func(d *docker.Options) { d.PoolSize = -1 }, opts...)
		owner = o
		return e
	})
	ctx := context.Background()
	sb, err := f.e.Create(ctx, SandboxConfig{Backend: ptr("docker"), Network: ptr(true), Secrets: []string{"gh"},
		AllowHTTP: []backends.HTTPRule{{Host: f.hp("other.test", f.other)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = f.e.Delete(context.Background(), sb.ID, true) })
	client, err := os.ReadFile(tlsClient(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sb.Workspace, "tlsclient"), client, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`echo "env:$GH"
grep -o 'GH=<senclaw-secret:gh:[0-9a-f]*>' /proc/self/environ | sed 's/^/environ:/'
./tlsclient -H "Authorization: token $GH" api https://api.test:%[1]d/check
./tlsclient -H "Authorization: token $GH" -hold senclaw-core-marker https://api.test:%[1]d/check
./tlsclient -H "Authorization: $GH" plain http://plain.test:%[2]d/x
./tlsclient -H "X-Token: $GH" other https://other.test:%[3]d/x
./tlsclient -d "token=$GH" body https://other.test:%[3]d/x
`, f.api, f.plain, f.other)
	before, _ := f.e.NetworkDenials(sb.ID)
	done := make(chan *RunResult, 1)
	go func() { done <- f.run(t, sb.ID, script) }()
	core := coreOf(t, sb.Workspace, "-hold\x00senclaw-core-marker\x00")
	os.WriteFile(filepath.Join(sb.Workspace, "dumped"), nil, 0o644)
	res := <-done
	out := res.Stdout
	lines := strings.Split(out, "\n")
	for _, want := range []string{"api:200 auth=match", "senclaw-core-marker:200 auth=match"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("want %q in:\n%s\nstderr: %s", want, out, res.Stderr)
		}
	}
	for _, label := range []string{"plain", "other", "body"} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, label+":403 refused: ") && strings.Contains(l, `secret "gh"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("want %s refused with 403 naming secret gh in:\n%s\nstderr: %s", label, out, res.Stderr)
		}
	}
	if !strings.Contains(out, "env:<senclaw-secret:gh:") || !strings.Contains(out, "environ:GH=<senclaw-secret:gh:") {
		t.Errorf("GH holds no placeholder:\n%s", out)
	}
	if strings.Contains(out+res.Stderr, secretValue) {
		t.Fatalf("the sandbox saw the value:\n%s", out)
	}
	if !bytes.Contains(core, []byte("senclaw-secret:gh:")) {
		t.Fatalf("the core dump (%d bytes) does not hold the placeholder the client sent: it is not the right process", len(core))
	}
	if bytes.Contains(core, []byte(secretValue)) {
		t.Fatal("the core dump of the sandboxed client holds the value")
	}
	filepath.Walk(sb.Workspace, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secretValue)) {
			t.Errorf("%s in the sandbox's workspace holds the value", p)
		}
		return nil
	})
	// The container's own filesystem, as docker exports it.
	names := containersOf(t, owner, "")
	if len(names) == 0 {
		t.Fatalf("no container of owner %s", owner)
	}
	for _, name := range names {
		fs, err := exec.Command("docker", "export", name).Output()
		if err != nil || len(fs) == 0 {
			t.Fatalf("docker export %s: %v", name, err)
		}
		if bytes.Contains(fs, []byte(secretValue)) {
			t.Errorf("the filesystem of container %s holds the value", name)
		}
	}
	f.mu.Lock()
	if f.sawValue != 2 || f.sawPlaceholder != 0 {
		t.Errorf("the servers saw the value %d times (want 2: both requests to api.test) and a placeholder %d times (want 0)", f.sawValue, f.sawPlaceholder)
	}
	f.mu.Unlock()
	if n, _ := f.e.NetworkDenials(sb.ID); n < before+3 {
		t.Errorf("denials %d -> %d, want the three placeholders counted", before, n)
	}
	secretRefusals := 0
	for _, r := range res.Record.Refusals {
		if r.Kind == RefusedSecret && strings.Contains(r.Rule, "gh") && r.Allow != "" {
			secretRefusals++
		}
	}
	if secretRefusals < 3 {
		t.Errorf("the run's refusals %+v: want the three placeholders sent elsewhere", res.Record.Refusals)
	}
}

// tlsClient builds testdata/tlsclient, static, and returns its path.
func tlsClient(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tlsclient")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", path, "./testdata/tlsclient")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/tlsclient: %v\n%s", err, out)
	}
	return path
}
