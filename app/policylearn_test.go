package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/policyfile"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestLearnProposesAPolicyThatRunsAgain is learn mode on a real command:
// python3 reads a file from an allowlisted folder, calls a test server on
// this machine through the proxy and writes a file. The owner's policy
// allows the allowlist mode and two servers' ports; the proposal is the
// allowlist mode with that folder and the one port it reached, the same
// command passes under it, and a variant that reaches the second server
// is refused.
func TestLearnProposesAPolicyThatRunsAgain(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is missing (tracing needs it)")
		}
		t.Skip("strace is missing")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is missing")
	}
	e := bwrapEngine(t)
	// Not under /tmp, which is each sandbox's own.
	data, project := testutil.SandboxDirIn(t, "/var/tmp", "senclaw-learn-"), testDir(t)
	must(t, os.WriteFile(filepath.Join(data, "input.txt"), []byte("input"), 0o644))
	// Writable by the sandbox's own uid as it is (a root engine traces no
	// run whose project is made writable through an idmapped mount).
	must(t, os.Chmod(project, 0o777))
	server := func(says string) int {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, says) }))
		t.Cleanup(s.Close)
		_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
		var n int
		fmt.Sscan(port, &n)
		return n
	}
	one, two := server("one"), server("two")
	writePolicy(t, filepath.Join(e.opts.ConfigDir, OwnerPolicyFile), fmt.Sprintf(`{"fsMode": "allowlist", "allowlist": [%q], "ports": {"loopback": [%d, %d]}}`, data, one, two))
	// Through the engine's proxy, as the sandbox's HTTP_PROXY says.
	script := func(port int) []string {
		return []string{"python3", "-c", fmt.Sprintf(`import os, urllib.request
for k in ("NO_PROXY", "no_proxy"):
    os.environ.pop(k, None)
d = open(%q).read()
proxy = urllib.request.build_opener(urllib.request.ProxyHandler({"http": "http://127.0.0.1:3128"}))
r = proxy.open("http://127.0.0.1:%d/", timeout=10).read().decode()
open("out.txt", "w").write(d + " " + r)
`, filepath.Join(data, "input.txt"), port)}
	}

	got, err := e.PolicyLearn(context.Background(), PolicyLearnRequest{ProjectDir: project, Argv: script(one), Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Run.OK() || !got.Written {
		t.Fatalf("learn run: %+v\nstdout %q stderr %q notes %q", got.Run, got.Stdout, got.Stderr, got.Notes)
	}
	prop, err := policyfile.Parse("proposal", []byte(got.Proposal))
	if err != nil {
		t.Fatal(err)
	}
	if prop.FsMode != "allowlist" || !slices.Equal(prop.Allowlist, []string{canonical(data)}) || !slices.Equal(prop.Ports.Loopback, []int{one}) || *prop.Network {
		t.Fatalf("proposal:\n%s\nnotes %q", got.Proposal, got.Notes)
	}
	if !slices.Contains(got.Diff, `+ fsMode: "allowlist"`) {
		t.Errorf("diff %q", got.Diff)
	}
	os.Remove(filepath.Join(project, "out.txt"))

	again, err := e.RunOnce(context.Background(), SandboxConfig{ProjectDir: &project}, RunRequest{Argv: script(one)})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := os.ReadFile(filepath.Join(project, "out.txt")); !again.Record.OK() || string(out) != "input one" {
		t.Fatalf("under the proposal: %+v %q %q", again.Record, out, again.Stderr)
	}
	if again.Record.ProjectDir != project {
		t.Errorf("the record's project %q, want %q (Recent runs proposes from it)", again.Record.ProjectDir, project)
	}
	other, err := e.RunOnce(context.Background(), SandboxConfig{ProjectDir: &project}, RunRequest{Argv: script(two)})
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, r := range other.Record.Refusals {
		refused = refused || strings.Contains(r.Line(), fmt.Sprint(two))
	}
	if other.Record.OK() || !refused {
		t.Fatalf("the variant reaching the second server: %+v %q", other.Record, other.Stderr)
	}
	t.Logf("learn run %d ms, rerun %d ms; the proposal:\n%s\ndiff %q\nnotes %q", got.Run.DurationMs, again.Record.DurationMs, got.Proposal, got.Diff, got.Notes)
}

// TestProposeFromEvents: the fs mode the reads need, and what the owner
// would have to allow said, not proposed.
func TestProposeFromEvents(t *testing.T) {
	t.Parallel()
	data := testutil.SandboxDirIn(t, "/var/tmp", "senclaw-propose-")
	must(t, os.WriteFile(filepath.Join(data, "in.txt"), nil, 0o644))
	read := func(target string) StoredEvent {
		var ev StoredEvent
		ev.Kind, ev.Target = "file.read", target
		return ev
	}
	rec := &RunRecord{DurationMs: 5000, ExitCode: ptr(0)}
	strict := policyfile.File{FsMode: "strict"}
	events := []StoredEvent{read(""), read("/usr (42 reads)"), read("/proc/self/status"), read(filepath.Join(data, "in.txt"))}
	f, notes := propose(strict, "/nonexistent-project", "/nonexistent-project", rec, events, nil, learnPeak{})
	if f.FsMode != "strict" || !strings.Contains(strings.Join(notes, "\n"), "would need the owner to allow") {
		t.Fatalf("under a strict owner: %+v %q", f, notes)
	}
	allow := policyfile.File{FsMode: "allowlist", Allowlist: []string{data}}
	f, _ = propose(allow, "/nonexistent-project", "/nonexistent-project", rec, events, []Refusal{{Kind: reachedRemote, Host: "api.example.org", Port: 443}}, learnPeak{})
	if f.FsMode != "allowlist" || !slices.Equal(f.Allowlist, []string{canonical(data)}) || !*f.Network || !slices.Equal(f.AllowedDomains, []string{"api.example.org"}) || *f.Limits.TimeoutMs != 15000 {
		t.Fatalf("under an allowlist owner: %s", policyfile.Marshal(f))
	}
}

// TestLearnProposesHTTPRulesListenPortsAndMemory: the owner's policy
// lets a project reach one API (GET and POST on any path) and listen on
// one port. A learn run of a python3 server that listens on that port
// and on another, holds 64 MB and GETs one path of the API proposes the
// API's rule narrowed to GET on that path, the one listen port (the
// other said in a note) and a memory limit over 128 MB from what it
// held. The command runs again under the proposal; a POST to the same
// path, which the owner's rule would allow, is refused by the project's.
func TestLearnProposesHTTPRulesListenPortsAndMemory(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is missing (tracing needs it)")
		}
		t.Skip("strace is missing")
	}
	api := serveText(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path) }))
	e := bwrapEngine(t, func(o *Options) {
		o.NetResolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "api.test" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host (test resolver)")
		}
		o.NetTreatAsRemote = func(ap netip.AddrPort) bool {
			return ap.Addr() == netip.MustParseAddr("127.0.0.1") && int(ap.Port()) == api
		}
	})
	free := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	listen, other := free(), free()
	project := testDir(t)
	must(t, os.Chmod(project, 0o777))
	writePolicy(t, filepath.Join(e.opts.ConfigDir, OwnerPolicyFile), fmt.Sprintf(`{"network": true, "allowedDomains": ["api.test"], "ports": {"listen": [%d]},
  "httpRules": [{"host": "api.test:%d", "methods": ["GET", "POST"]}]}`, listen, api))
	script := func(method string) []string {
		return []string{"python3", "-c", fmt.Sprintf(`import os, socket, time, urllib.request
for k in ("NO_PROXY", "no_proxy"):
    os.environ.pop(k, None)
servers = []
for port in (%d, %d):
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen()
    servers.append(s)
held = b"x" * (64 << 20)
time.sleep(0.3)
proxy = urllib.request.build_opener(urllib.request.ProxyHandler({"http": "http://127.0.0.1:3128"}))
req = urllib.request.Request("http://api.test:%d/v1/items", method=%q, data=b"{}" if %q == "POST" else None)
open("out.txt", "w").write(proxy.open(req, timeout=10).read().decode())
`, listen, other, api, method, method)}
	}
	got, err := e.PolicyLearn(context.Background(), PolicyLearnRequest{ProjectDir: project, Argv: script("GET"), Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Run.OK() || !got.Written {
		t.Fatalf("learn run: %+v\nstdout %q stderr %q notes %q", got.Run, got.Stdout, got.Stderr, got.Notes)
	}
	prop, err := policyfile.Parse("proposal", []byte(got.Proposal))
	if err != nil {
		t.Fatal(err)
	}
	wantRule := fmt.Sprintf("api.test:%d", api)
	if len(prop.HTTPRules) != 1 || prop.HTTPRules[0].Host != wantRule || !slices.Equal(prop.HTTPRules[0].Methods, []string{"GET"}) || !slices.Equal(prop.HTTPRules[0].Paths, []string{"/v1/items"}) {
		t.Errorf("HTTP rules %+v, want GET /v1/items on %s", prop.HTTPRules, wantRule)
	}
	if !slices.Equal(prop.Ports.Listen, []int{listen}) || !strings.Contains(strings.Join(got.Notes, "\n"), fmt.Sprintf("listened on port %d", other)) {
		t.Errorf("listen ports %v, notes %q: want %d proposed and %d said", prop.Ports.Listen, got.Notes, listen, other)
	}
	if prop.Limits.MemoryMB == nil || *prop.Limits.MemoryMB < 192 || *prop.Limits.MemoryMB > 1024 {
		t.Errorf("memory %v MB for a run that held 64 MB; notes %q", prop.Limits.MemoryMB, got.Notes)
	}
	os.Remove(filepath.Join(project, "out.txt"))

	again, err := e.RunOnce(context.Background(), SandboxConfig{ProjectDir: &project}, RunRequest{Argv: script("GET")})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := os.ReadFile(filepath.Join(project, "out.txt")); !again.Record.OK() || string(out) != "GET /v1/items" {
		t.Fatalf("under the proposal: %+v %q %q", again.Record, out, again.Stderr)
	}
	os.Remove(filepath.Join(project, "out.txt"))
	post, err := e.RunOnce(context.Background(), SandboxConfig{ProjectDir: &project}, RunRequest{Argv: script("POST")})
	if err != nil {
		t.Fatal(err)
	}
	refused := slices.ContainsFunc(post.Record.Refusals, func(r Refusal) bool { return r.Kind == RefusedHTTP && r.Method == "POST" })
	if post.Record.OK() || !refused {
		t.Fatalf("a POST under the proposal: %+v %q", post.Record, post.Stderr)
	}
	t.Logf("learn run %d ms, rerun %d ms; the proposal:\n%s\nnotes %q", got.Run.DurationMs, again.Record.DurationMs, got.Proposal, got.Notes)
}
