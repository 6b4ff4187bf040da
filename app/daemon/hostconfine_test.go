package daemon

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/internal/testutil"
)

// securityEvents counts the events of kind (of who, when given).
func (d *testDaemon) securityEvents(t *testing.T, kind, who string) int {
	t.Helper()
	var page struct {
		Events []struct{ Kind string } `json:"events"`
	}
	q := url.Values{"kind": {kind}, "limit": {"1000"}}
	if who != "" {
		q.Set("principal", who)
	}
	if err := d.c.Do(context.Background(), "GET", "/security-events", q, nil, &page); err != nil {
		t.Fatal(err)
	}
	return len(page.Events)
}

// tenantToken adds tenant name through the CLI and returns the
// environment that makes the CLI that tenant, and its project dir.
func (d *testDaemon) tenantToken(t *testing.T, name string) (env []string, project string) {
	t.Helper()
	code, tok, errOut := d.cli(t, nil, "tenants", "add", "--tools", "all", name)
	if code != 0 {
		t.Fatalf("tenants add %s: %d %s", name, code, errOut)
	}
	project = filepath.Join(d.root, "data", "tenants", name, "workspace", "project")
	if err := os.MkdirAll(project, 0o777); err != nil {
		t.Fatal(err)
	}
	return []string{"SENCLAW_TOKEN=" + strings.TrimSpace(tok)}, project
}

// TestATenantsHostExecIsConfined: against a real daemon with the Agent
// shell switch off and exec.tenantHostPolicy warn, a tenant's command
// runs on the host under a Landlock domain of its own (the record says
// "landlock (host exec)", and the would_deny event is recorded): it
// writes its project and its tenant directory, and reaches nothing else
// whatever it does, with the shell guard's path and environment groups
// switched off so that only the kernel stands in the way: another
// tenant's directory and the engine's data dir by absolute path, by
// `cd ..`, through a symlink it made, from a script it wrote; the
// engine's /proc/<pid>/environ; the owner's home and the second local
// user's world-readable file; a signal to the engine.
func TestATenantsHostExecIsConfined(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	other := testutil.SecondUser(t)
	d := startDaemon(t)
	aEnv, aProject := d.tenantToken(t, "a")
	d.tenantToken(t, "b")
	data := filepath.Join(d.root, "data")
	bDir := filepath.Join(data, "tenants", "b")
	for _, f := range []string{filepath.Join(bDir, "workspace", "secret"), filepath.Join(data, "engine-secret"), filepath.Join(d.home, "owner-secret")} {
		if err := os.WriteFile(f, []byte("SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	otherFile := filepath.Join(other.Home, "senclaw-hostexec-secret")
	other.Run(t, "sh", "-c", "echo SECRET > "+otherFile+" && chmod 644 "+otherFile+" && chmod 755 "+other.Home)
	t.Cleanup(func() { os.Remove(otherFile) })
	d.setAgentShell(t, false)
	for _, kv := range []string{"guard.protectedPaths=false", "guard.envDump=false", "exec.tenantHostPolicy=warn"} {
		if code, out, errOut := d.cli(t, nil, "settings", "set", kv); code != 0 {
			t.Fatalf("settings set %s: %d %s %s", kv, code, out, errOut)
		}
	}
	pid := strconv.Itoa(d.pid)
	script := strings.Join([]string{
		// What must work.
		`echo ok > own && echo CAN:project`,
		`echo ok > ` + filepath.Join(data, "tenants", "a", "runtime", "own") + ` && echo CAN:tenant-dir`,
		`cat /usr/bin/env >/dev/null && echo CAN:system-roots`,
		// What must not.
		`cat ` + bDir + `/workspace/secret 2>/dev/null && echo LEAK:absolute`,
		`echo x > ` + bDir + `/workspace/planted 2>/dev/null && echo LEAK:write-other`,
		`(cd ../../.. && cat b/workspace/secret) 2>/dev/null && echo LEAK:dotdot`,
		`(cd ../../../.. && cat engine-secret) 2>/dev/null && echo LEAK:dotdot-data`,
		`ln -s ` + bDir + ` blink 2>/dev/null; cat blink/workspace/secret 2>/dev/null && echo LEAK:symlink`,
		`echo y > blink/workspace/planted2 2>/dev/null && echo LEAK:symlink-write`,
		`printf 'cat %s/engine-secret\n' ` + data + ` > s.sh; sh s.sh 2>/dev/null && echo LEAK:script`,
		`cat ` + data + `/engine-secret 2>/dev/null && echo LEAK:data`,
		`touch ` + data + `/planted 2>/dev/null && echo LEAK:write-data`,
		`ls ` + data + `/senclaw* >/dev/null 2>&1 && echo LEAK:list-data`,
		`cat /proc/` + pid + `/environ >/dev/null 2>&1 && echo LEAK:environ`,
		`ls -l /proc/` + pid + `/cwd/ >/dev/null 2>&1 && echo LEAK:proc-cwd`,
		`cat ` + d.home + `/owner-secret 2>/dev/null && echo LEAK:owner-home`,
		`cat ` + otherFile + ` 2>/dev/null && echo LEAK:other-user`,
		`kill -0 ` + pid + ` 2>/dev/null && echo LEAK:signal`,
		`echo done`,
	}, "\n")
	code, stdout, errOut := d.agentShell(t, aEnv, aProject, script)
	if code != 0 || !strings.Contains(stdout, "done") {
		t.Fatalf("the tenant's host command: %d %q %s", code, stdout, errOut)
	}
	for _, want := range []string{"CAN:project", "CAN:tenant-dir", "CAN:system-roots"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the confined host exec could not do what it may (%s): %s %s", want, stdout, errOut)
		}
	}
	if strings.Contains(stdout, "LEAK:") {
		t.Errorf("the confined host exec reached what it must not: %s", stdout)
	}
	for _, f := range []string{filepath.Join(bDir, "workspace", "planted"), filepath.Join(bDir, "workspace", "planted2"), filepath.Join(data, "planted")} {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	if r := d.lastRun(t); r.Isolation != "landlock (host exec)" || r.Backend != "landlock" {
		t.Errorf("the record says %q on %q, want landlock (host exec)", r.Isolation, r.Backend)
	}
	if n := d.securityEvents(t, app.EventTenantHostWouldDeny, "tenant:a"); n != 1 {
		t.Errorf("%d would_deny events of the tenant, want 1", n)
	}
	if code, out, _ := d.cli(t, aEnv, "agent-shell", "--check", "--project", aProject); code != 0 || !strings.Contains(out, "landlock (host exec)") {
		t.Logf("agent-shell --check: %d %s", code, out)
	}
}

// TestHostExecWithoutLandlock: with the landlock backend not offered
// (SENCLAW_BACKENDS, as on a machine without it), host exec of others
// cannot be confined: security.exec_fs_confinement_unavailable is
// recorded once for the engine's start, however many commands come;
// under warn a tenant's command is refused and an agent's runs
// unconfined (record "none"); under allow a tenant's command that names
// a tenant's directory (its own project included, or another's) is
// refused, and one that names none runs.
func TestHostExecWithoutLandlock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t, "SENCLAW_BACKENDS=bwrap,direct")
	aEnv, aProject := d.tenantToken(t, "a")
	code, secret, _ := d.cli(t, nil, "tokens", "add", "--tools", "all", "bot")
	if code != 0 {
		t.Fatal("tokens add")
	}
	bot := []string{"SENCLAW_TOKEN=" + strings.TrimSpace(secret)}
	project := d.dir(t, "project")
	d.setAgentShell(t, false)

	if code, out, errOut := d.agentShell(t, aEnv, aProject, "echo ran"); code == 0 || strings.Contains(out, "ran") || !strings.Contains(errOut, "Landlock is not available") {
		t.Errorf("warn, a tenant without Landlock: %d %q %q, want a refusal naming Landlock", code, out, errOut)
	}
	if code, out, errOut := d.agentShell(t, bot, project, "echo ran"); code != 0 || !strings.Contains(out, "ran") {
		t.Errorf("warn, an agent without Landlock: %d %q %q, want it run", code, out, errOut)
	}
	if r := d.lastRun(t); r.Isolation != "none" {
		t.Errorf("the agent's unconfined host exec is recorded as %q, want none", r.Isolation)
	}
	if code, out, errOut := d.cli(t, nil, "settings", "set", "exec.tenantHostPolicy=allow"); code != 0 {
		t.Fatalf("settings set: %d %s %s", code, out, errOut)
	}
	for _, command := range []string{
		"cat " + filepath.Join(aProject, "notes.txt"),
		"ls ../..",
		"ls " + filepath.Join(d.root, "data", "tenants", "b"),
	} {
		code, out, errOut := d.agentShell(t, aEnv, aProject, command+"; echo ran")
		if code == 0 || strings.Contains(out, "ran") || !strings.Contains(errOut, "tenant's directory") {
			t.Errorf("allow, %q without Landlock: %d %q %q, want a refusal naming the tenant's directory", command, code, out, errOut)
		}
	}
	if code, out, errOut := d.agentShell(t, aEnv, aProject, "echo ran"); code != 0 || !strings.Contains(out, "ran") {
		t.Errorf("allow, a tenant's command naming no tenant dir without Landlock: %d %q %q, want it run", code, out, errOut)
	}
	if n := d.securityEvents(t, app.EventFsConfinementUnavailable, ""); n != 1 {
		t.Errorf("%d %s events, want 1 for the engine's start", n, app.EventFsConfinementUnavailable)
	}
}
