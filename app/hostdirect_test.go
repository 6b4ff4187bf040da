package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/landlock"
)

// hostExecEngine is an engine with Landlock (at the ABI a confined host
// exec needs) and the direct backend, allowDirect on.
func hostExecEngine(t *testing.T) *Engine {
	t.Helper()
	requireLandlock(t)
	if abi, _ := landlock.ABIVersion(); abi < hostScopeABI {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a confined host exec needs Landlock ABI %d, the kernel has %d", hostScopeABI, abi)
		}
		t.Skipf("a confined host exec needs Landlock ABI %d, the kernel has %d", hostScopeABI, abi)
	}
	e := newTestEngine(t, []backends.Backend{landlock.New(landlock.Options{SandboxUser: sandboxCredential()}), directBackend(t)})
	s := e.Settings()
	s.AllowDirect = true
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	return e
}

// isRefusal reports whether err is a refusal of the gate.
func isRefusal(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// TestADirectRunOfAnAgentGoesThroughTheTenantHostPolicy: the direct
// backend runs on this machine, so an agent's run there is host exec,
// under the tenant host policy as on the off paths. A fake gh on the
// run's PATH leaves a marker. Under deny gh is refused as a credentialed
// CLI, and what a look at the command line cannot see (a script that
// runs gh, a link to gh under another name, perl's exec, Python's
// execvp) by the policy, which names the direct backend and the
// isolating backend to use instead: gh never starts. Under warn the run
// is confined by Landlock (isolation "landlock (host exec)"): it writes
// its workspace and reads neither the owner's home nor the engine's data
// dir. The owner's direct runs are as before, unconfined.
func TestADirectRunOfAnAgentGoesThroughTheTenantHostPolicy(t *testing.T) {
	t.Parallel()
	e := hostExecEngine(t)
	agent := principal.With(context.Background(), principal.Principal{Kind: principal.Agent, Name: "bot"})
	owner := context.Background()

	root := testDir(t)
	bin := filepath.Join(root, "bin")
	marker := filepath.Join(root, "markers", "gh-ran")
	for _, d := range []string{bin, filepath.Dir(marker)} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("gh", "#!/bin/sh\necho \"$*\" >> "+marker+"\necho GH-RAN\n")
	write("x.sh", "#!/bin/sh\ngh auth token\n")
	if err := os.Symlink(filepath.Join(bin, "gh"), filepath.Join(bin, "notgh")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.opts.HomeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ownerSecret, engineSecret := filepath.Join(e.opts.HomeDir, "owner-secret"), filepath.Join(e.opts.DataDir, "engine-secret")
	for _, f := range []string{ownerSecret, engineSecret} {
		if err := os.WriteFile(f, []byte("SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"PATH": bin + ":" + e.opts.SystemPath}
	direct := func(ctx context.Context, command string) (*RunResult, error) {
		return e.RunOnce(ctx, SandboxConfig{Backend: ptr("direct")}, RunRequest{Command: command, Env: env})
	}
	policy := func(v string) {
		t.Helper()
		s := e.Settings()
		s.Exec.TenantHostPolicy = v
		if _, err := e.SetSettings(s); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(what string) {
		t.Helper()
		if b, err := os.ReadFile(marker); err == nil {
			t.Errorf("%s: the fake gh ran (%q)", what, b)
		}
	}

	policy(HostPolicyDeny)
	if _, err := direct(agent, "gh auth status"); !isRefusal(err) || !strings.Contains(err.Error(), "gh on this machine, a credentialed CLI") {
		t.Errorf("deny, the agent's gh on the direct backend: %v, want the credentialed CLI gh named", err)
	}
	gone("deny, gh")
	for _, command := range []string{
		filepath.Join(bin, "x.sh"),
		"notgh auth token",
		`perl -e 'exec "gh", "auth", "token"'`,
		`python3 -c 'import os; os.execvp("gh", ["gh", "auth", "token"])'`,
	} {
		_, err := direct(agent, command)
		if !isRefusal(err) {
			t.Errorf("deny, the agent's %q on the direct backend: %v, want a refusal", command, err)
		} else if msg := err.Error(); !strings.Contains(msg, "credentialed CLI") && (!strings.Contains(msg, pathDirect) ||
			!strings.Contains(msg, "exec.tenantHostPolicy is deny") || !strings.Contains(msg, "Use an isolating backend instead")) {
			t.Errorf("deny, the agent's %q: %v, want the refusal to name the direct backend, the policy and what to do", command, err)
		}
		gone("deny, " + command)
	}
	res, err := direct(owner, "notgh owner && cat "+ownerSecret)
	if err != nil || !strings.Contains(res.Stdout, "GH-RAN") || !strings.Contains(res.Stdout, "SECRET") || res.Record.Isolation != isolationDegraded {
		t.Fatalf("deny, the owner's direct run: %v %+v, want gh run and the owner's home read, unconfined", err, res)
	}
	os.Remove(marker)

	policy(HostPolicyWarn)
	s := e.Settings()
	s.Guard.ProtectedPaths = false // only the kernel in the way
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	res, err = direct(agent, strings.Join([]string{
		`echo ok > own && echo CAN:workspace`,
		`cat /usr/bin/env >/dev/null && echo CAN:system-roots`,
		`cat ` + ownerSecret + ` 2>/dev/null && echo LEAK:owner-home`,
		`cat ` + engineSecret + ` 2>/dev/null && echo LEAK:data`,
		`touch ` + filepath.Join(e.opts.DataDir, "planted") + ` 2>/dev/null && echo LEAK:write-data`,
		`echo done`,
	}, "\n"))
	if err != nil || !strings.Contains(res.Stdout, "done") {
		t.Fatalf("warn, the agent's direct run: %v %+v", err, res)
	}
	if res.Record.Isolation != isolationHostExec || res.Record.Backend != landlock.Name {
		t.Errorf("warn, the agent's direct run is recorded as %q on %q, want %q", res.Record.Isolation, res.Record.Backend, isolationHostExec)
	}
	for _, want := range []string{"CAN:workspace", "CAN:system-roots"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("warn, the confined direct run could not do what it may (%s): %s %s", want, res.Stdout, res.Stderr)
		}
	}
	if strings.Contains(res.Stdout, "LEAK:") {
		t.Errorf("warn, the confined direct run reached what it must not: %s", res.Stdout)
	}
	res, err = direct(owner, "cat "+ownerSecret)
	if err != nil || !strings.Contains(res.Stdout, "SECRET") || res.Record.Isolation != isolationDegraded {
		t.Errorf("warn, the owner's direct run: %v %+v, want it unconfined as before", err, res)
	}
}
