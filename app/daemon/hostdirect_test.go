package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

// TestADirectRunOfAnAgentIsHostExec: against a real daemon with
// allowDirect on, a run of an agent token on the direct backend is host
// exec, which the tenant host policy governs as it does the off paths.
// A fake gh on the run's PATH leaves a marker when it starts. Under deny
// the agent's gh is refused naming the credentialed CLI, and what the
// command line check cannot see (a script that runs gh, a link to gh
// under another name, perl's exec, Python's execvp) is refused by the
// policy, naming the direct backend and the isolating backend to use
// instead: the marker never appears, and each refusal is a security
// event. Under warn, with Landlock (and the shell guard's path check
// off, so that only the kernel stands in the way), the agent's direct run is confined
// (isolation "landlock (host exec)"): the owner's home and the engine's
// data dir are out of its reach, and the would_deny event is recorded.
// The owner's direct runs are as before: unconfined ("none (degraded)"),
// gh starts, the owner's home is read.
func TestADirectRunOfAnAgentIsHostExec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	ctx := context.Background()
	code, secret, errOut := d.cli(t, nil, "tokens", "add", "--tools", "all", "bot")
	if code != 0 {
		t.Fatalf("tokens add: %d %s", code, errOut)
	}
	bot := d.c.WithToken(strings.TrimSpace(secret))
	if code, out, errOut := d.cli(t, nil, "settings", "set", "allowDirect=true"); code != 0 {
		t.Fatalf("settings set allowDirect: %d %s %s", code, out, errOut)
	}

	// The fake gh, a script that runs it, and a link to it under another
	// name; all reachable by the sandbox user.
	bin := d.dir(t, "fakebin")
	marker := filepath.Join(d.dir(t, "markers"), "gh-ran")
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
	path := bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	data := filepath.Join(d.root, "data")
	ownerSecret, engineSecret := filepath.Join(d.home, "owner-secret"), filepath.Join(data, "engine-secret")
	for _, f := range []string{ownerSecret, engineSecret} {
		if err := os.WriteFile(f, []byte("SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	backend := "direct"
	direct := func(c *client.Client, command string) (*apitype.RunReply, error) {
		return c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: command, Env: map[string]string{"PATH": path}}, Sandbox: apitype.SandboxConfig{Backend: &backend}}, nil)
	}
	gone := func(what string) {
		t.Helper()
		if b, err := os.ReadFile(marker); err == nil {
			t.Errorf("%s: the fake gh ran (%q)", what, b)
		}
	}
	set := func(kv string) {
		t.Helper()
		if code, out, errOut := d.cli(t, nil, "settings", "set", kv); code != 0 {
			t.Fatalf("settings set %s: %d %s %s", kv, code, out, errOut)
		}
	}

	set("exec.tenantHostPolicy=deny")
	if _, err := direct(bot, "gh auth status"); err == nil || !strings.Contains(err.Error(), "credentialed CLI") || !strings.Contains(err.Error(), "gh") {
		t.Errorf("deny, the agent's gh on the direct backend: %v, want a refusal naming the credentialed CLI gh", err)
	}
	gone("deny, gh")
	for _, command := range []string{
		filepath.Join(bin, "x.sh"),
		"notgh auth token",
		`perl -e 'exec "gh", "auth", "token"'`,
		`python3 -c 'import os; os.execvp("gh", ["gh", "auth", "token"])'`,
	} {
		_, err := direct(bot, command)
		if err == nil {
			t.Errorf("deny, the agent's %q on the direct backend ran", command)
		} else if msg := err.Error(); !strings.Contains(msg, "exec.tenantHostPolicy") || (!strings.Contains(msg, "credentialed CLI") &&
			(!strings.Contains(msg, "the sandbox's backend is direct") || !strings.Contains(msg, "isolating backend"))) {
			t.Errorf("deny, the agent's %q: %v, want the tenant host policy's refusal naming the direct backend and an isolating backend", command, err)
		}
		gone("deny, " + command)
	}
	if n := d.securityEvents(t, app.EventTenantHostDenied, "agent:bot"); n < 3 {
		t.Errorf("%d %s events of the bot under deny, want one a refusal the command line check did not make", n, app.EventTenantHostDenied)
	}
	if n := d.securityEvents(t, app.EventCredentialedCLIDenied, "agent:bot"); n < 1 {
		t.Errorf("%d %s events of the bot, want the gh refusal's", n, app.EventCredentialedCLIDenied)
	}

	// The owner's direct run, as before: unconfined, gh starts, the home
	// is read.
	res, err := direct(d.c, "notgh owner; cat "+ownerSecret)
	if err != nil || !strings.Contains(res.Stdout, "GH-RAN") || !strings.Contains(res.Stdout, "SECRET") || res.Run.Isolation != "none (degraded)" {
		t.Fatalf("deny, the owner's direct run: %v %+v, want gh run and the owner's home read, unconfined", err, res)
	}
	os.Remove(marker)

	// Only the kernel stands in the way: the shell guard's path check,
	// which would refuse the data dir named, is off.
	set("guard.protectedPaths=false")
	set("exec.tenantHostPolicy=warn")
	res, err = direct(bot, strings.Join([]string{
		`echo ok > own && echo CAN:workspace`,
		`cat /usr/bin/env >/dev/null && echo CAN:system-roots`,
		`cat ` + ownerSecret + ` 2>/dev/null && echo LEAK:owner-home`,
		`cat ` + engineSecret + ` 2>/dev/null && echo LEAK:data`,
		`touch ` + filepath.Join(data, "planted") + ` 2>/dev/null && echo LEAK:write-data`,
		`echo done`,
	}, "\n"))
	if err != nil || !strings.Contains(res.Stdout, "done") {
		t.Fatalf("warn, the agent's direct run: %v %+v", err, res)
	}
	if res.Run.Isolation != "landlock (host exec)" || res.Run.Backend != "landlock" {
		t.Errorf("warn, the agent's direct run is recorded as %q on %q, want landlock (host exec)", res.Run.Isolation, res.Run.Backend)
	}
	for _, want := range []string{"CAN:workspace", "CAN:system-roots"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("warn, the confined direct run could not do what it may (%s): %s %s", want, res.Stdout, res.Stderr)
		}
	}
	if strings.Contains(res.Stdout, "LEAK:") {
		t.Errorf("warn, the confined direct run reached what it must not: %s", res.Stdout)
	}
	if _, err := os.Lstat(filepath.Join(data, "planted")); err == nil {
		t.Errorf("the confined direct run wrote the engine's data dir")
	}
	if n := d.securityEvents(t, app.EventTenantHostWouldDeny, "agent:bot"); n != 1 {
		t.Errorf("%d %s events of the bot under warn, want 1", n, app.EventTenantHostWouldDeny)
	}
	res, err = direct(d.c, "cat "+ownerSecret)
	if err != nil || !strings.Contains(res.Stdout, "SECRET") || res.Run.Isolation != "none (degraded)" {
		t.Errorf("warn, the owner's direct run: %v %+v, want it unconfined as before", err, res)
	}
}
