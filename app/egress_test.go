package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/proxyca"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// secretValue is the value of the test's secret gh: it must reach the
// test's server and never the sandbox.
const secretValue = "ghp_SeCrEt-VaLuE-0f-th3-t3st"

// egressFixture stands in for the internet with local HTTPS servers on
// 127.0.0.1, their certificates from a test CA that the engine pins as
// their CA (pinnedCAs): api.test (the secret's host; it says whether it
// was sent the value, never echoing it), other.test (a second host with
// an HTTP rule, so the proxy looks into it), tunnel.test (no rule, no
// secret), git.test (git over HTTPS), and plain.test (plain HTTP).
type egressFixture struct {
	e                              *Engine
	ca                             *testutil.TestCA
	api, other, tunnel, git, plain int
	mu                             sync.Mutex
	sawValue, sawPlaceholder, reqs int
}

func newEgressFixture(t *testing.T) *egressFixture {
	t.Helper()
	return newEgressFixtureOf(t, bwrapEngine)
}

// newEgressFixtureOf is newEgressFixture with an engine of engine's.
func newEgressFixtureOf(t *testing.T, engine func(*testing.T, ...engineOpt) *Engine) *egressFixture {
	t.Helper()
	f := &egressFixture{ca: testutil.NewTestCA(t)}
	check := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		auth := r.Header.Get("Authorization") + " " + r.URL.RawQuery
		f.mu.Lock()
		f.reqs++
		if strings.Contains(auth, secretValue) {
			f.sawValue++
		}
		if strings.Contains(auth, "senclaw-secret") {
			f.sawPlaceholder++
		}
		f.mu.Unlock()
		switch {
		case r.Header.Get("Authorization") == "Bearer "+secretValue:
			io.WriteString(w, "auth=match")
		case strings.Contains(auth, secretValue):
			io.WriteString(w, "auth=value-elsewhere")
		default:
			io.WriteString(w, "auth=none")
		}
	})
	f.api = f.ca.ServeTLS(t, check, "api.test")
	f.other = f.ca.ServeTLS(t, check, "other.test")
	f.tunnel = f.ca.ServeTLS(t, text("tunnel-ok"), "tunnel.test")
	mux := http.NewServeMux()
	gitRepo(t, mux)
	f.git = f.ca.ServeTLS(t, mux, "git.test")
	f.plain = serveText(t, check)
	names := map[string]bool{"api.test": true, "other.test": true, "tunnel.test": true, "git.test": true, "plain.test": true}
	ports := []int{f.api, f.other, f.tunnel, f.git, f.plain}
	f.e = engine(t, func(o *Options) {
		o.NetResolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			if names[host] {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host (test resolver)")
		}
		o.NetTreatAsRemote = func(ap netip.AddrPort) bool {
			return ap.Addr() == netip.MustParseAddr("127.0.0.1") && slices.Contains(ports, int(ap.Port()))
		}
	})
	s := f.e.Settings()
	s.PinnedCAs = map[string]string{}
	for _, hp := range []string{f.hp("api.test", f.api), f.hp("other.test", f.other), f.hp("git.test", f.git)} {
		s.PinnedCAs[hp] = f.ca.PEM()
	}
	if _, err := f.e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.AddSecret(SecretSpec{Name: "gh", Hosts: []string{f.hp("api.test", f.api)}, Header: "Authorization", Format: "Bearer {}"}, []byte(secretValue+"\n")); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *egressFixture) hp(host string, port int) string { return fmt.Sprintf("%s:%d", host, port) }

func (f *egressFixture) run(t *testing.T, id, script string) *RunResult {
	t.Helper()
	res, err := f.e.Exec(context.Background(), id, RunRequest{Command: script, TimeoutMs: 120000})
	if err != nil {
		t.Fatalf("run refused: %v", err)
	}
	return res
}

// coreOf waits for the sandboxed process whose command line holds mark
// to say it is ready (a file "ready" in the workspace), and returns a core
// dump of it taken from the host with gdb's gcore.
func coreOf(t *testing.T, workspace, mark string) []byte {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, "the sandboxed process to be ready", func() bool {
		_, err := os.Stat(filepath.Join(workspace, "ready"))
		return err == nil
	})
	pids := testutil.PidsWith(mark)
	if len(pids) != 1 {
		t.Fatalf("processes with %q on their command line: %v, want one", mark, pids)
	}
	dir := t.TempDir()
	if out, err := exec.Command("gcore", "-o", filepath.Join(dir, "core"), pids[0]).CombinedOutput(); err != nil {
		t.Fatalf("gcore %s: %v\n%s", pids[0], err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "core."+pids[0]))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Need(t, tool+" is not installed")
		}
	}
}

// TestASandboxUsesASecretItNeverHolds: a sandbox given secret gh finds a
// placeholder in GH; sent in Authorization to the secret's host it
// arrives there as the value; the value is in no environment, no file,
// no memory of the sandbox (its env, /proc/self/environ, a core dump of a
// process that made the request). The placeholder sent to a second local
// host (plain HTTP, or HTTPS the proxy looks into; a header, a body) is
// refused, counted and listed in the run's refusals.
func TestASandboxUsesASecretItNeverHolds(t *testing.T) {
	t.Parallel()
	needTools(t, "curl", "python3", "gcore")
	f := newEgressFixture(t)
	sb, err := f.e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true), Secrets: []string{"gh"},
		AllowHTTP: []backends.HTTPRule{{Host: f.hp("other.test", f.other)}}})
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`echo "env:$GH"
cat /proc/self/environ | tr '\0' '\n' | grep '^GH=' | sed 's/^/environ:/'
echo "curl:$(curl -s -m 10 -H "Authorization: token $GH" https://api.test:%[1]d/check)"
python3 - senclaw-core-marker <<'PY'
import os, time, urllib.request
req = urllib.request.Request("https://api.test:%[1]d/check", headers={"Authorization": "token " + os.environ["GH"]})
print("python:" + urllib.request.urlopen(req, timeout=10).read().decode(), flush=True)
# The test takes a core dump of this process now, from the host.
open("ready", "w").close()
for _ in range(600):
    if os.path.exists("dumped"):
        break
    time.sleep(0.1)
PY
echo "plain:$(curl -s -m 10 -o /dev/null -w '%%{http_code}' -H "Authorization: $GH" http://plain.test:%[2]d/x)"
echo "other:$(curl -s -m 10 -o /dev/null -w '%%{http_code}' -H "X-Token: $GH" https://other.test:%[3]d/x)"
echo "body:$(curl -s -m 10 -o /dev/null -w '%%{http_code}' --data-binary "token=$GH" https://other.test:%[3]d/x)"
`, f.api, f.plain, f.other)
	before, _ := f.e.NetworkDenials(sb.ID)
	done := make(chan *RunResult, 1)
	go func() { done <- f.run(t, sb.ID, script) }()
	core := coreOf(t, sb.Workspace, "python3\x00-\x00senclaw-core-marker\x00")
	os.WriteFile(filepath.Join(sb.Workspace, "dumped"), nil, 0o644)
	res := <-done
	out := res.Stdout
	for _, want := range []string{"curl:auth=match", "python:auth=match", "plain:403", "other:403", "body:403"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("want %q in:\n%s\nstderr: %s", want, out, res.Stderr)
		}
	}
	if !strings.Contains(out, "env:<senclaw-secret:gh:") || !strings.Contains(out, "environ:GH=<senclaw-secret:gh:") {
		t.Errorf("GH holds no placeholder:\n%s", out)
	}
	if strings.Contains(out+res.Stderr, secretValue) {
		t.Fatalf("the sandbox saw the value:\n%s", out)
	}
	// A core dump of the process that sent the placeholder holds the
	// placeholder (it is a dump of that process) and not the value.
	if !bytes.Contains(core, []byte("senclaw-secret:gh:")) {
		t.Fatalf("the core dump (%d bytes) does not hold the placeholder the process sent: it is not the right process", len(core))
	}
	if bytes.Contains(core, []byte(secretValue)) {
		t.Fatal("the core dump of the sandboxed process holds the value")
	}
	// Its files: nothing in the workspace holds it.
	filepath.Walk(sb.Workspace, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secretValue)) {
			t.Errorf("%s in the sandbox's workspace holds the value", p)
		}
		return nil
	})
	f.mu.Lock()
	if f.sawValue != 2 || f.sawPlaceholder != 0 {
		t.Errorf("the servers saw the value %d times (want 2: curl and python to api.test) and a placeholder %d times (want 0)", f.sawValue, f.sawPlaceholder)
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

// TestTheSandboxTrustsTheEnginesCA: curl, Python urllib (requests if
// installed), Node fetch and git trust the engine's CA without flags for
// a host the proxy looks into; a host with no secret and no rule is
// tunnelled untouched (the sandbox sees the host's own certificate); an
// HTTP rule of GET only refuses a POST, naming the rule.
func TestTheSandboxTrustsTheEnginesCA(t *testing.T) {
	t.Parallel()
	needTools(t, "curl", "python3", "node", "git")
	f := newEgressFixture(t)
	sb, err := f.e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true),
		AllowHTTP: []backends.HTTPRule{{Host: f.hp("other.test", f.other), Methods: []string{"GET"}}, {Host: f.hp("git.test", f.git)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sb.Workspace, "test-ca.pem"), []byte(f.ca.PEM()), 0o644); err != nil {
		t.Fatal(err)
	}
	other := fmt.Sprintf("https://other.test:%d/get", f.other)
	tunnel := fmt.Sprintf("https://tunnel.test:%d/t", f.tunnel)
	script := strings.Join([]string{
		`echo "vars:$SSL_CERT_FILE $REQUESTS_CA_BUNDLE $NODE_EXTRA_CA_CERTS $PIP_CERT $CURL_CA_BUNDLE $GIT_SSL_CAINFO"`,
		`echo "curl:$(curl -s -m 10 ` + other + `)"`,
		`python3 -c "import urllib.request; print('urllib:' + urllib.request.urlopen('` + other + `', timeout=10).read().decode())"`,
		`python3 -c "import requests" 2>/dev/null && python3 -c "import requests; print('requests:' + requests.get('` + other + `', timeout=10).text)" || echo "requests:not-installed"`,
		`node -e "fetch('` + other + `').then(r=>r.text()).then(b=>console.log('fetch:'+b), e=>console.log('fetch failed', e.cause||e))"`,
		fmt.Sprintf(`git clone -q https://git.test:%d/git/repo.git r && echo "git:$(git -C r log --format=%%s)"`, f.git),
		// The tunnelled host: its own certificate, which the test CA
		// verifies and the engine's bundle does not.
		`echo "tunnel-own-ca:$(curl -s -m 10 --cacert test-ca.pem ` + tunnel + `)"`,
		`echo "tunnel-bundle:$(curl -s -m 10 -o /dev/null -w '%{http_code}' ` + tunnel + `)"`,
		`python3 -c "import ssl,socket
s = socket.create_connection(('127.0.0.1', 3128)); s.sendall(b'CONNECT tunnel.test:` + fmt.Sprint(f.tunnel) + ` HTTP/1.1\r\nHost: x\r\n\r\n'); s.recv(4096)
c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
t = c.wrap_socket(s, server_hostname='tunnel.test'); d = t.getpeercert(True)
import hashlib; print('tunnel-cert:' + hashlib.sha256(d).hexdigest())"`,
		`echo "post:$(curl -s -m 10 -D - -o body.txt -X POST -d x=1 ` + other + ` | tr -d '\r' | grep -i '^x-senclaw-refused:')"; echo "post-body:$(cat body.txt)"`,
	}, "\n")
	res := f.run(t, sb.ID, script)
	out := res.Stdout
	want := []string{"curl:auth=none", "urllib:auth=none", "fetch:auth=none", "git:hello from git", "tunnel-own-ca:tunnel-ok /t", "tunnel-bundle:000"}
	if !strings.Contains(out, "requests:not-installed") {
		want = append(want, "requests:auth=none")
	}
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("want %q in:\n%s\nstderr:\n%s", w, out, res.Stderr)
		}
	}
	if !strings.Contains(out, "vars:"+strings.TrimSpace(strings.Repeat(CABundlePath+" ", 6))+"\n") {
		t.Errorf("the CA variables do not all point at the bundle:\n%s", out)
	}
	// The certificate the sandbox saw for the tunnelled host is the one
	// the server has.
	if !strings.Contains(out, "tunnel-cert:") || strings.Contains(out, "tunnel-cert:\n") {
		t.Errorf("no certificate seen through the tunnel:\n%s", out)
	}
	if !strings.Contains(out, "x-senclaw-refused: allowHttp "+f.hp("other.test", f.other)+": GET on any path; to allow it: add POST to the methods") &&
		!strings.Contains(strings.ToLower(out), strings.ToLower("X-Senclaw-Refused: allowHttp "+f.hp("other.test", f.other)+": GET on any path; to allow it: add POST")) {
		t.Errorf("the POST was not refused naming the rule:\n%s", out)
	}
	if !strings.Contains(out, "post-body:SenClaw refused POST") {
		t.Errorf("the refusal's body does not say it:\n%s", out)
	}
	if !slices.ContainsFunc(res.Record.Refusals, func(r Refusal) bool {
		return r.Kind == RefusedHTTP && r.Method == "POST" && r.Path == "/get" && strings.Contains(r.Allow, "add POST")
	}) {
		t.Errorf("the run's refusals %+v: want the POST", res.Record.Refusals)
	}
}

// TestARunListsWhatItWasRefused: one run refused a connection, an HTTP
// request and a Unix socket; its record lists the three, with the rule
// and how to allow each.
func TestARunListsWhatItWasRefused(t *testing.T) {
	t.Parallel()
	needTools(t, "curl", "python3")
	f := newEgressFixture(t)
	sockDir := testDir(t)
	l, err := net.Listen("unix", filepath.Join(sockDir, "svc.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(filepath.Join(sockDir, "svc.sock"), 0o777)
	sb, err := f.e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true), Domains: []string{"other.test"},
		Mounts:    []backends.Mount{{Source: sockDir, Target: "svc", ReadOnly: true}},
		AllowHTTP: []backends.HTTPRule{{Host: f.hp("other.test", f.other), Methods: []string{"GET"}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := f.run(t, sb.ID, fmt.Sprintf(`curl -s -m 10 -o /dev/null https://api.test:%d/ ; curl -s -m 10 -o /dev/null -X DELETE https://other.test:%d/x
python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('svc/svc.sock')" 2>&1 | tail -1`, f.api, f.other))
	kinds := map[string]Refusal{}
	for _, r := range res.Record.Refusals {
		kinds[r.Kind] = r
		t.Logf("refusal: %s", r.Line())
	}
	c, h, u := kinds[RefusedConnect], kinds[RefusedHTTP], kinds[RefusedUnix]
	if c.Host != "api.test" || c.Port != f.api || !strings.Contains(c.Allow, "add api.test to the sandbox's domains") {
		t.Errorf("connect refusal %+v", c)
	}
	if h.Method != "DELETE" || h.Host != "other.test" || h.Path != "/x" || !strings.Contains(h.Rule, "allowHttp") || !strings.Contains(h.Allow, "add DELETE") {
		t.Errorf("http refusal %+v", h)
	}
	if !strings.HasSuffix(u.Target, "svc/svc.sock") || !strings.Contains(u.Rule, "Unix socket guard") || !strings.Contains(u.Allow, "allowedSockets") {
		t.Errorf("unix refusal %+v (stdout %q)", u, res.Stdout)
	}
	// The record as stored (runs show) says the same.
	rec, err := f.e.Run(res.Record.ID)
	if err != nil || len(rec.Refusals) != len(res.Record.Refusals) {
		t.Errorf("the stored record's refusals %+v (%v)", rec, err)
	}
}

// TestTheCAKeyAndSecretsAreOutOfReach: the CA key, the sealing key and
// the store are unreadable by the sandbox user (from a sandbox in open
// mode, which sees the whole disk) and by another local user.
func TestTheCAKeyAndSecretsAreOutOfReach(t *testing.T) {
	t.Parallel()
	f := newEgressFixture(t)
	if _, err := f.e.ca.CertPEM(); err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(f.e.opts.ConfigDir, proxyca.KeyFile), f.e.secretsKey(), filepath.Join(f.e.DataDir(), "senclaw.db")}
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v", p, fi.Mode().Perm())
		}
	}
	other := testutil.SecondUser(t)
	for _, p := range files {
		if out, err := other.Command("cat", p).CombinedOutput(); err == nil || bytes.Contains(out, []byte(secretValue)) {
			t.Errorf("another user read %s: %v %q", p, err, out)
		}
	}
	sb, err := f.e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), FsMode: ptr("open"), Network: ptr(true), Secrets: []string{"gh"}})
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	for _, p := range files {
		fmt.Fprintf(&script, "cat %q >/dev/null 2>&1 && echo READ:%s\n", p, p)
	}
	script.WriteString("echo done\n")
	res := f.run(t, sb.ID, script.String())
	if strings.Contains(res.Stdout, "READ:") || strings.TrimSpace(res.Stdout) != "done" {
		t.Errorf("the sandbox read a key or the store, or found the value on disk:\n%s", res.Stdout)
	}
}

// TestLandlockRunsUseSecretsAndTrustTheCA: a Landlock run, which reaches
// the proxy through its door, gets the CA bundle granted (its path
// rewritten) and its secret's placeholder swapped on the way to the
// secret's host.
func TestLandlockRunsUseSecretsAndTrustTheCA(t *testing.T) {
	t.Parallel()
	needTools(t, "curl")
	f := newEgressFixtureOf(t, landlockEngine)
	res, err := f.e.RunOnce(context.Background(), SandboxConfig{Backend: ptr("landlock"), Network: ptr(true), Secrets: []string{"gh"}},
		RunRequest{Command: fmt.Sprintf(`echo "ca:$SSL_CERT_FILE"; echo "curl:$(curl -s -m 10 -H "Authorization: token $GH" https://api.test:%d/check)"`, f.api)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Isolation != "landlock" || !strings.Contains(res.Stdout, "curl:auth=match\n") || strings.Contains(res.Stdout, "ca:"+CABundlePath) || strings.Contains(res.Stdout, secretValue) {
		t.Fatalf("record %+v\nstdout %s\nstderr %s", res.Record, res.Stdout, res.Stderr)
	}
}

// TestAWriteTheFileAPIRefusedIsInTheRunsRefusals: a write the file API
// refuses into a sandbox (a read-only mount) while a run of it goes is in
// that run's refusals, with how to allow it; a write it takes is not.
func TestAWriteTheFileAPIRefusedIsInTheRunsRefusals(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	src := testDir(t)
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), Mounts: []backends.Mount{{Source: src, Target: "ro", ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *RunResult, 1)
	go func() {
		res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "touch started; while [ ! -e go ]; do sleep 0.05; done"})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	testutil.WaitFor(t, 20*time.Second, "the run to start", func() bool {
		_, err := os.Stat(filepath.Join(sb.Workspace, "started"))
		return err == nil
	})
	if _, err := e.WriteFile(sb.ID, "ro/x.txt", []byte("x")); err == nil {
		t.Fatal("a write into a read-only mount was taken")
	}
	if _, err := e.WriteFile(sb.ID, "go", nil); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res == nil {
		t.Fatal("no result")
	}
	var writes []Refusal
	for _, r := range res.Record.Refusals {
		if r.Kind == RefusedWrite {
			writes = append(writes, r)
		}
	}
	if len(writes) != 1 || writes[0].Target != "ro/x.txt" || !strings.Contains(writes[0].Rule, "read-only") || !strings.Contains(writes[0].Allow, "read-write") {
		t.Fatalf("the run's write refusals %+v (all: %+v)", writes, res.Record.Refusals)
	}
}
