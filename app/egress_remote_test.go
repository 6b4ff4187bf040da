package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestRemoteEngineSandboxUsesASecretItNeverHolds is
// TestDockerSandboxUsesASecretItNeverHolds for a sandbox on another
// machine's Docker engine (the second daemon): the CA bundle is written
// into its container for the run, its traffic comes over the relay to
// the same proxy, which swaps its placeholder for the value on the way to
// the secret's host and refuses it elsewhere. The HTTP rule of the
// secret's host (GET on /check) refuses a POST and another path there,
// naming the rule. The value is nowhere on that engine's side either:
// not in the container's configuration or exported filesystem, nor
// anywhere in the daemon's data root (volumes, containers, logs), nor in
// any process's environment while the run goes. A one-shot run there
// gets its placeholder and the bundle too.
func TestRemoteEngineSandboxUsesASecretItNeverHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon and a Go build; make test-go runs it")
	}
	t.Parallel()
	needTools(t, "gcore")
	r := testutil.Remote(t)
	f := newEgressFixtureOf(t, func(t *testing.T, opts ...engineOpt) *Engine { return remoteEngine(t, r, opts...) })
	api := f.hp("api.test", f.api)
	sb := newRemoteSandbox(t, f.e, SandboxConfig{Network: ptr(true), Secrets: []string{"gh"},
		AllowHTTP: []backends.HTTPRule{{Host: api, Methods: []string{"GET"}, Paths: []string{"/check"}}, {Host: f.hp("other.test", f.other)}}})
	client, err := os.Open(tlsClient(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := f.e.WriteFileFrom(sb.ID, "tlsclient", client); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`chmod +x tlsclient
echo "ca:$SSL_CERT_FILE"
grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE" | sed 's/^/certs:/'
echo "env:$GH"
grep -o 'GH=<senclaw-secret:gh:[0-9a-f]*>' /proc/self/environ | sed 's/^/environ:/'
./tlsclient -H "Authorization: token $GH" api https://api.test:%[1]d/check
./tlsclient -H "Authorization: token $GH" -hold senclaw-remote-core-marker https://api.test:%[1]d/check
./tlsclient -H "Authorization: token $GH" -d x=1 post https://api.test:%[1]d/check
./tlsclient -H "Authorization: token $GH" path https://api.test:%[1]d/admin
./tlsclient -H "Authorization: $GH" plain http://plain.test:%[2]d/x
./tlsclient -H "X-Token: $GH" other https://other.test:%[3]d/x
./tlsclient -d "token=$GH" body https://other.test:%[3]d/x
`, f.api, f.plain, f.other)
	before, _ := f.e.NetworkDenials(sb.ID)
	done := make(chan *RunResult, 1)
	go func() { done <- f.run(t, sb.ID, script) }()
	core, procs := holdAndDump(t, f.e, sb.ID, "-hold\x00senclaw-remote-core-marker\x00")
	res := <-done
	out := res.Stdout
	if res.Record.Isolation != "docker" || !strings.Contains(out, "ca:"+CABundlePath+"\n") || strings.Contains(out, "certs:0\n") {
		t.Errorf("the run's isolation %q, or its CA bundle (want it at %s):\n%s\nstderr: %s", res.Record.Isolation, CABundlePath, out, res.Stderr)
	}
	checkTLSClientLines(t, res, "api", "senclaw-remote-core-marker")
	// The method and path rule of the secret's host.
	for label, allow := range map[string]string{"post": "add POST to the methods", "path": "add /admin (or a prefix or glob of it) to the paths"} {
		want := fmt.Sprintf("%s:403 refused: allowHttp %s: GET on /check; to allow it: %s", label, api, allow)
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	for _, want := range []Refusal{{Kind: RefusedHTTP, Method: "POST", Path: "/check"}, {Kind: RefusedHTTP, Method: "GET", Path: "/admin"}} {
		if !slices.ContainsFunc(res.Record.Refusals, func(r Refusal) bool {
			return r.Kind == want.Kind && r.Method == want.Method && r.Path == want.Path && strings.Contains(r.Rule, "allowHttp")
		}) {
			t.Errorf("the run's refusals %+v: want %s %s", res.Record.Refusals, want.Method, want.Path)
		}
	}
	// That engine's side: the sandbox's containers as it keeps them
	// (their configuration, environment included, and their exported
	// filesystem), and all it holds on disk.
	ids, err := r.Docker("ps", "-aq", "--filter", "label=senclaw.sandbox="+sb.ID).Output()
	if err != nil || len(strings.Fields(string(ids))) == 0 {
		t.Fatalf("the sandbox's containers on the engine: %q %v", ids, err)
	}
	blobs := map[string][]byte{}
	for _, id := range strings.Fields(string(ids)) {
		inspect, err := r.Docker("inspect", id).Output()
		if err != nil {
			t.Fatalf("docker inspect %s there: %v", id, err)
		}
		fs, err := r.Docker("export", id).Output()
		if err != nil {
			t.Fatalf("docker export %s there: %v", id, err)
		}
		blobs["the configuration of container "+id] = inspect
		blobs["the filesystem of container "+id] = fs
	}
	f.checkValueNowhere(t, sb.ID, secretEvidence{res: res, core: core, procs: procs,
		dirs: []string{r.DataRoot()}, blobs: blobs, deniedBefore: before, sent: 2})
	// A one-shot run there gets the same: its placeholder and the bundle.
	once, err := f.e.RunOnce(context.Background(), SandboxConfig{Engine: ptr("far"), Network: ptr(true), Secrets: []string{"gh"}},
		RunRequest{Command: `echo "env:$GH"; grep -c 'SenClaw Sandbox proxy CA' "$SSL_CERT_FILE"`, TimeoutMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(once.Stdout, "env:<senclaw-secret:gh:") || !strings.HasSuffix(once.Stdout, "\n1\n") || strings.Contains(once.Stdout, secretValue) {
		t.Errorf("a one-shot run there: %+v\nstdout %q\nstderr %s", once.Record, once.Stdout, once.Stderr)
	}
}
