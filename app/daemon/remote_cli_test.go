package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/doccheck"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestRemoteEngineFromTheCLI: an engine on another machine (the second
// daemon of scripts/docker-remote.sh) named with senclaw engines add,
// shown by engines ls and caps, a sandbox made there with create
// --engine, files copied in and out with cp, a folder refused unless
// copied, ssh refused with the reason, and the engine kept while a
// sandbox lives there.
func TestRemoteEngineFromTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon; make test-go runs it")
	}
	r := testutil.Remote(t)
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	served := serveInProcess(t, data)
	defer stopServed(t, served)
	proj := testutil.SandboxDir(t, "senclaw-proj-")
	if err := os.MkdirAll(filepath.Join(proj, "in", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(proj, "in", "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "in", "sub", "b.bin"), []byte{0, 1, 2, 255}, 0o644)
	os.Chmod(proj, 0o777)
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(proj); err != nil {
		t.Fatal(err)
	}
	must := func(what string, args ...string) string {
		t.Helper()
		code, out, errOut := senclaw(t, args...)
		if code != 0 {
			t.Fatalf("%s: senclaw %q: exit %d\n%s%s", what, args, code, out, errOut)
		}
		return out
	}

	if code, _, errOut := senclaw(t, "engines", "add", "tunnel", "--host", "ssh://me@build-box"); code != 2 || !strings.Contains(errOut, "uses ssh, which SenClaw does not support yet") {
		t.Fatalf("an ssh engine: %d %q", code, errOut)
	}
	if code, _, errOut := senclaw(t, "engines", "add", "plain", "--host", "tcp://127.0.0.1:2375"); code != 2 || !strings.Contains(errOut, "caCert") {
		t.Fatalf("a tcp engine without TLS: %d %q", code, errOut)
	}
	must("settings", "settings", "set", "defaultImage=senclaw-test/busybox:latest")
	must("engines add", "engines", "add", "far", "--host", r.Host, "--ca", r.CACert, "--cert", r.Cert, "--key", r.Key)
	out := must("engines ls", "engines", "ls")
	if !strings.Contains(out, "far ") || !strings.Contains(out, "another machine") || !strings.Contains(out, "healthy") {
		t.Fatalf("engines ls:\n%s", out)
	}
	if out := must("caps", "caps"); !strings.Contains(out, "ENGINE") || !strings.Contains(out, "far ") {
		t.Fatalf("caps shows no engines:\n%s", out)
	}

	id := strings.TrimSpace(must("create", "create", "--name", "rem", "--engine", "far"))
	if out := must("ls", "ls"); !strings.Contains(out, "docker on far") {
		t.Fatalf("ls does not say where the sandbox lives:\n%s", out)
	}
	if code, _, errOut := senclaw(t, "cp", "in", "rem:copied/"); code != 0 || !strings.Contains(errOut, "copied 2 file") {
		t.Fatalf("cp in: %d %q", code, errOut)
	}
	if out := must("run there", "run", "--sandbox", "rem", "--", "sh", "-c", "cat copied/in/a.txt; od -An -tu1 copied/in/sub/b.bin; echo made there >out.txt"); !strings.Contains(out, "alpha") || !strings.Contains(out, "0   1   2 255") {
		t.Fatalf("the copied files there: %q", out)
	}
	if code, _, errOut := senclaw(t, "cp", "rem:copied/in", "back"); code != 0 {
		t.Fatalf("cp out: %d %q", code, errOut)
	}
	if got, err := os.ReadFile(filepath.Join(proj, "back", "sub", "b.bin")); err != nil || string(got) != "\x00\x01\x02\xff" {
		t.Fatalf("the copied-out file: %q %v", got, err)
	}
	if code, _, errOut := senclaw(t, "cp", "rem:out.txt", "out.txt"); code != 0 {
		t.Fatalf("cp of what the run made: %d %q", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(proj, "out.txt")); string(got) != "made there\n" {
		t.Fatalf("what the run made, here: %q", got)
	}

	// A folder of this machine: refused unless copied.
	if code, _, errOut := senclaw(t, "create", "--engine", "far", "--mount", "in:m"); code != 2 || !strings.Contains(errOut, "cannot be bound on engine far") {
		t.Fatalf("a bind mount on the remote engine: %d %q", code, errOut)
	}
	cp := strings.TrimSpace(must("create with a copy", "create", "--name", "rem-copy", "--engine", "far", "--mount", "in:m:ro,copy"))
	if out := must("run with the copy", "run", "--sandbox", cp, "--", "cat", "m/a.txt"); out != "alpha\n" {
		t.Fatalf("the copy: %q", out)
	}

	if code, _, errOut := senclaw(t, "engines", "rm", "far"); code == 0 || !strings.Contains(errOut, id) {
		t.Fatalf("removing an engine a sandbox lives on: %d %q", code, errOut)
	}
	must("rm", "rm", "--purge", id, cp)
	must("engines rm", "engines", "rm", "far")
	if out := must("engines ls", "engines", "ls"); strings.Contains(out, "far ") {
		t.Fatalf("far is still listed:\n%s", out)
	}
}

// TestRemoteEnginesPageRuns runs the examples of docs/remote-engines.md
// (the blocks marked with its name) against a daemon of their own, with
// the second Docker daemon of scripts/docker-remote.sh for the page's
// build-box: its address for the page's, its certificates where the page
// keeps them (~/.docker/big), the test image as the default one.
func TestRemoteEnginesPageRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon; make test-go runs it")
	}
	r := testutil.Remote(t)
	requireTools(t, "bwrap", "bash")
	blocks := docBlocks(t, "TestRemoteEnginesPageRuns")
	if len(blocks) == 0 {
		t.Fatal("no block of the docs is marked <!-- run: TestRemoteEnginesPageRuns -->")
	}
	d := startDocsDaemon(t)
	home := ""
	for _, kv := range d.env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	certs := filepath.Join(home, ".docker", "big")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, from := range map[string]string{"ca.pem": r.CACert, "cert.pem": r.Cert, "key.pem": r.Key} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certs, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(d.project, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.project, "src", "main.go"), []byte("package main\n"), 0o644)
	for i := range blocks {
		blocks[i].Text = strings.ReplaceAll(blocks[i].Text, "tcp://build-box:2376", r.Host)
	}
	setup := blocks[0]
	setup.Text = "senclaw settings set defaultImage=senclaw-test/busybox:latest"
	out, err := d.run(t, append([]doccheck.Block{setup}, blocks...))
	if err != nil {
		t.Fatalf("the page's examples fail as written (from %s): %v\n%s\n--- the daemon's log:\n%s", blocks[0].Where(), err, out, d.log.String())
	}
	if got, err := os.ReadFile(filepath.Join(d.project, "files.txt")); err != nil || string(got) != "main.go\n" {
		t.Fatalf("the file copied out: %q %v\n%s", got, err, out)
	}
}
