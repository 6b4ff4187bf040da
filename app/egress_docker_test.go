package app

import (
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
	core, procs := holdAndDump(t, f.e, sb.ID, "-hold\x00senclaw-core-marker\x00")
	res := <-done
	checkTLSClientLines(t, res, "api", "senclaw-core-marker")
	// The container's own filesystem, as docker exports it.
	names := containersOf(t, owner, "")
	if len(names) == 0 {
		t.Fatalf("no container of owner %s", owner)
	}
	blobs := map[string][]byte{}
	for _, name := range names {
		fs, err := exec.Command("docker", "export", name).Output()
		if err != nil {
			t.Fatalf("docker export %s: %v", name, err)
		}
		blobs["the filesystem of container "+name] = fs
	}
	f.checkValueNowhere(t, sb.ID, secretEvidence{res: res, core: core, procs: procs,
		dirs: []string{sb.Workspace}, blobs: blobs, deniedBefore: before, sent: 2})
}

// checkTLSClientLines checks the lines testdata/tlsclient printed in the
// run of the Docker tests' script: the requests of passed to the secret's
// host went through with the value, and the placeholder sent elsewhere
// (plain, other, body) was refused naming secret gh.
func checkTLSClientLines(t *testing.T, res *RunResult, passed ...string) {
	t.Helper()
	out := res.Stdout
	for _, label := range passed {
		if !strings.Contains(out, label+":200 auth=match\n") {
			t.Errorf("want %s:200 auth=match in:\n%s\nstderr: %s", label, out, res.Stderr)
		}
	}
	for _, label := range []string{"plain", "other", "body"} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, label+":403 refused: ") && strings.Contains(l, `secret "gh"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("want %s refused with 403 naming secret gh in:\n%s\nstderr: %s", label, out, res.Stderr)
		}
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
