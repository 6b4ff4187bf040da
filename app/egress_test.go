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

// holdAndDump waits for the process of sandbox id whose command line
// holds mark to say it is ready (a file "ready" in the workspace, read
// through the file API, so that it works for a sandbox on any engine),
// takes a core dump of it from the host with gdb's gcore, lists the
// processes of this machine whose environment or command line holds the
// secret's value while it waits, and tells it to go on (a file
// "dumped").
func holdAndDump(t *testing.T, e *Engine, id, mark string) (core []byte, procs []string) {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, "the sandboxed process to be ready", func() bool {
		_, err := e.ReadFile(id, "ready", 0, false)
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
	core, err := os.ReadFile(filepath.Join(dir, "core."+pids[0]))
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir("/proc")
	for _, en := range entries {
		for _, part := range []string{"environ", "cmdline"} {
			if b, err := os.ReadFile(filepath.Join("/proc", en.Name(), part)); err == nil && bytes.Contains(b, []byte(secretValue)) {
				procs = append(procs, en.Name()+"/"+part)
			}
		}
	}
	if _, err := e.WriteFile(id, "dumped", nil); err != nil {
		t.Fatal(err)
	}
	return core, procs
}

// secretEvidence is what a test gathered of one run that used secret gh
// (its placeholder sent to the secret's host, and three times where it
// does not go: plain HTTP, a header and a body to a host the proxy looks
// into), for checkValueNowhere.
type secretEvidence struct {
	res *RunResult
	// core and procs are holdAndDump's.
	core  []byte
	procs []string
	// dirs are directories of this machine that hold the sandbox's
	// files (its workspace, its plumbing; a Docker daemon's data root),
	// walked for the value.
	dirs []string
	// blobs are more of its places by name: a container's exported
	// filesystem, its configuration.
	blobs map[string][]byte
	// deniedBefore is the sandbox's denials before the run; sent is how
	// many of the run's requests to the secret's host went through (the
	// servers see the value that many times).
	deniedBefore, sent int
}

// fileHolds reports whether the file at p holds s, read a piece at a
// time (a daemon's data root may hold large files).
func fileHolds(p, s string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	keep := 0 // the tail of the last piece, for a match across two
	for {
		n, err := f.Read(buf[keep:])
		if bytes.Contains(buf[:keep+n], []byte(s)) {
			return true
		}
		if err != nil {
			return false
		}
		tail := min(len(s)-1, keep+n)
		copy(buf, buf[keep+n-tail:keep+n])
		keep = tail
	}
}

// checkValueNowhere checks what every test of a sandbox given secret gh
// asks, whatever its backend or engine: its environment held the
// placeholder (the run printed "env:$GH" and GH's line of
// /proc/self/environ as "environ:..."), the value is in no output, no
// core dump of the process that sent the placeholder, no process's
// environment or command line, no file of ev.dirs and none of ev.blobs;
// the servers saw the value only from the requests that went through and
// never a placeholder; the placeholders sent elsewhere were counted and
// are in the run's refusals.
func (f *egressFixture) checkValueNowhere(t *testing.T, sandboxID string, ev secretEvidence) {
	t.Helper()
	out := ev.res.Stdout
	if !strings.Contains(out, "env:<senclaw-secret:gh:") || !strings.Contains(out, "environ:GH=<senclaw-secret:gh:") {
		t.Errorf("GH holds no placeholder:\n%s", out)
	}
	if strings.Contains(out+ev.res.Stderr, secretValue) {
		t.Fatalf("the sandbox saw the value:\n%s", out)
	}
	// A core dump of the process that sent the placeholder holds the
	// placeholder (it is a dump of that process) and not the value.
	if !bytes.Contains(ev.core, []byte("senclaw-secret:gh:")) {
		t.Fatalf("the core dump (%d bytes) does not hold the placeholder the process sent: it is not the right process", len(ev.core))
	}
	if bytes.Contains(ev.core, []byte(secretValue)) {
		t.Fatal("the core dump of the sandboxed process holds the value")
	}
	if len(ev.procs) > 0 {
		t.Errorf("processes of this machine hold the value in their environment or command line: %v", ev.procs)
	}
	files := 0
	for _, dir := range ev.dirs {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			files++
			if fileHolds(p, secretValue) {
				t.Errorf("%s holds the value", p)
			}
			return nil
		})
		if err != nil {
			t.Errorf("walking %s: %v", dir, err)
		}
	}
	if len(ev.dirs) > 0 && files == 0 {
		t.Errorf("no file in %v: the walk looked nowhere", ev.dirs)
	}
	for name, b := range ev.blobs {
		if len(b) == 0 {
			t.Errorf("%s is empty: nothing was looked into", name)
		}
		if bytes.Contains(b, []byte(secretValue)) {
			t.Errorf("%s holds the value", name)
		}
	}
	f.mu.Lock()
	if f.sawValue != ev.sent || f.sawPlaceholder != 0 {
		t.Errorf("the servers saw the value %d times (want %d: the requests to api.test that went through) and a placeholder %d times (want 0)", f.sawValue, ev.sent, f.sawPlaceholder)
	}
	f.mu.Unlock()
	if n, _ := f.e.NetworkDenials(sandboxID); n < ev.deniedBefore+3 {
		t.Errorf("denials %d -> %d, want the three placeholders counted", ev.deniedBefore, n)
	}
	secretRefusals := 0
	for _, r := range ev.res.Record.Refusals {
		if r.Kind == RefusedSecret && strings.Contains(r.Rule, "gh") && r.Allow != "" {
			secretRefusals++
		}
	}
	if secretRefusals < 3 {
		t.Errorf("the run's refusals %+v: want the three placeholders sent elsewhere", ev.res.Record.Refusals)
	}
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
	core, procs := holdAndDump(t, f.e, sb.ID, "python3\x00-\x00senclaw-core-marker\x00")
	res := <-done
	for _, want := range []string{"curl:auth=match", "python:auth=match", "plain:403", "other:403", "body:403"} {
		if !strings.Contains(res.Stdout, want+"\n") {
			t.Errorf("want %q in:\n%s\nstderr: %s", want, res.Stdout, res.Stderr)
		}
	}
	f.checkValueNowhere(t, sb.ID, secretEvidence{res: res, core: core, procs: procs,
		dirs: []string{sb.Workspace, f.e.netDir(sb.ID)}, deniedBefore: before, sent: 2})
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

// TestThePinnedCAOfTheMostSpecificPatternHolds: with pins for
// *.example.org, *.api.example.org and api.example.org:8443, the exact
// name and port wins, then the longer wildcard, whatever the order the
// settings' map gives them.
func TestThePinnedCAOfTheMostSpecificPatternHolds(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	cas := map[string]*testutil.TestCA{}
	s := e.Settings()
	s.PinnedCAs = map[string]string{}
	for _, p := range []string{"*.example.org", "*.api.example.org", "api.example.org:8443"} {
		cas[p] = testutil.NewTestCA(t)
		s.PinnedCAs[p] = cas[p].PEM()
	}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port int
		want string
	}{
		{"api.example.org", 8443, "api.example.org:8443"},
		{"v2.api.example.org", 443, "*.api.example.org"},
		{"www.example.org", 443, "*.example.org"},
	} {
		for i := 0; i < 20; i++ { // map order varies from call to call
			pool := e.pinnedRoots(c.host, c.port)
			if pool == nil || !pool.Equal(cas[c.want].Pool()) {
				t.Fatalf("%s:%d: the pin of another pattern than %s was taken", c.host, c.port, c.want)
			}
		}
	}
}
