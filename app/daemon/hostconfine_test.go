package daemon

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
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

// TestHostExecTimeoutKillsTheWholeTree: host exec has the timeout
// exec.hostTimeoutSeconds (60 s by default, shown by senclaw settings);
// on it the run's whole process tree is killed, a grandchild that left
// the run's session (setsid) and ignores SIGTERM included, for the
// owner's unconfined run and an agent's confined one; an agent asking for
// longer gets no more; the output is capped as every run's.
func TestHostExecTimeoutKillsTheWholeTree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	if code, out, _ := d.cli(t, nil, "settings"); code != 0 || !regexp.MustCompile(`exec.hostTimeoutSeconds\s+60\b`).MatchString(out) {
		t.Errorf("senclaw settings does not show exec.hostTimeoutSeconds 60: %d %s", code, out)
	}
	code, secret, _ := d.cli(t, nil, "tokens", "add", "--tools", "all", "bot")
	if code != 0 {
		t.Fatal("tokens add")
	}
	bot := []string{"SENCLAW_TOKEN=" + strings.TrimSpace(secret)}
	ownerTok, err := os.ReadFile(filepath.Join(d.root, "config", "senclaw", "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	owner := []string{"SENCLAW_TOKEN=" + strings.TrimSpace(string(ownerTok))}
	d.setAgentShell(t, false)
	if code, out, errOut := d.cli(t, nil, "settings", "set", "exec.hostTimeoutSeconds=2"); code != 0 {
		t.Fatalf("settings set: %d %s %s", code, out, errOut)
	}
	for _, c := range []struct {
		name      string
		env       []string
		isolation string
		args      []string
	}{
		{"owner", owner, "none", nil},
		{"agent", bot, "landlock (host exec)", []string{"--timeout", "5m"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			project := d.dir(t, "timeout-"+c.name)
			pidFile := filepath.Join(project, "gc.pid")
			command := `setsid sh -c 'trap "" TERM; echo $$ > gc.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 300`
			args := append([]string{"agent-shell", "--agent", "claude-code", "--project", project}, c.args...)
			cmd := exec.Command(d.bin, append(args, "-c", command)...)
			cmd.Env, cmd.Dir = append(append([]string{}, d.env...), c.env...), project
			start := time.Now()
			out, _ := cmd.CombinedOutput()
			took := time.Since(start)
			if cmd.ProcessState.ExitCode() != 124 || took > 30*time.Second {
				t.Errorf("exit %d after %s, want 124 (timed out) after about 2 s: %s", cmd.ProcessState.ExitCode(), took, out)
			}
			r := d.lastRun(t)
			if !r.TimedOut || r.TimeoutMs != 2000 || r.Isolation != c.isolation {
				t.Errorf("record: timed out %v, timeout %d ms, isolation %q; want true, 2000, %q", r.TimedOut, r.TimeoutMs, r.Isolation, c.isolation)
			}
			b, err := os.ReadFile(pidFile)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 1 {
				t.Fatalf("the grandchild's pid: %q %v", b, err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for alive(pid) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the setsid grandchild %d that ignores SIGTERM outlived the timed-out run", pid)
			}
		})
	}
	// (The agent shell streams all of it to its caller; the run keeps
	// OutputCap of each stream.)
	code, _, errOut := d.agentShell(t, bot, d.dir(t, "big"), "head -c 3000000 /dev/zero | tr '\\0' a; echo")
	if r := d.lastRun(t); code != 0 || !r.Truncated {
		t.Errorf("a confined host exec's large output: exit %d, truncated %v: %s", code, r.Truncated, errOut)
	}
}

// alive reports whether pid is a process that has not exited.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

// TestCredentialedCLIsAreRefusedUnderDeny: under exec.tenantHostPolicy
// deny, a command of an agent token that would start a credentialed CLI
// on this machine (the direct backend, which allowDirect lets agents
// ask for; the off paths) is refused with the CLI named, also wrapped in
// sh -c, bash -c, env, nohup, timeout, xargs, sudo and nice, three levels
// deep, and for a name of exec.credentialedCommands; the refusal is the
// security event security.exec_credentialed_cli_denied. Look-alikes that
// start none are not taken for one: the tenant host policy refuses them
// (deny keeps the direct backend, host exec, for the owner), with no word
// of a credentialed CLI. The owner's run; under warn the list does not
// apply.
func TestCredentialedCLIsAreRefusedUnderDeny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	ctx := context.Background()
	code, secret, _ := d.cli(t, nil, "tokens", "add", "--tools", "all", "bot")
	if code != 0 {
		t.Fatal("tokens add")
	}
	bot := d.c.WithToken(strings.TrimSpace(secret))
	for _, kv := range []string{"exec.tenantHostPolicy=deny", "exec.credentialedCommands=vault,heroku", "allowDirect=true"} {
		if code, out, errOut := d.cli(t, nil, "settings", "set", kv); code != 0 {
			t.Fatalf("settings set %s: %d %s %s", kv, code, out, errOut)
		}
	}
	backend := "direct"
	direct := func(c *client.Client, command string) error {
		_, err := c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: command}, Sandbox: apitype.SandboxConfig{Backend: &backend}}, nil)
		return err
	}
	for _, command := range []string{
		"gh auth status",
		"/usr/bin/gcloud auth list",
		"aws s3 ls",
		"az account show",
		"kubectl get pods",
		"terraform plan",
		"psql -c 'select 1'",
		"docker ps",
		"vault read secret/x",
		"heroku apps",
		"sh -c 'gh auth token'",
		`bash -c "kubectl get secrets"`,
		"env AWS_PROFILE=prod aws sts get-caller-identity",
		"nohup docker run --rm alpine true",
		"timeout 5 terraform apply -auto-approve",
		"echo pods | xargs kubectl get",
		"sudo -u root psql",
		"nice -n 5 gcloud auth print-access-token",
		`sh -c "bash -c 'env nohup gh repo list'"`,
		`timeout 9 env sh -c "nice xargs az vm list < /dev/null"`,
		"echo $(gh auth token)",
		"true && docker info",
	} {
		err := direct(bot, command)
		if err == nil || !strings.Contains(err.Error(), "credentialed CLI") {
			t.Errorf("deny, the agent's %q on the host: %v, want a refusal naming the credentialed CLI", command, err)
		}
	}
	for _, command := range []string{"echo gh aws docker", "ls /usr/bin/ | grep -c kubectl || true", "git --version >/dev/null 2>&1 || true", "printf 'terraform\\n'"} {
		if err := direct(bot, command); err == nil || strings.Contains(err.Error(), "credentialed CLI") || !strings.Contains(err.Error(), "the sandbox's backend is direct") {
			t.Errorf("deny, the agent's look-alike %q: %v, want the tenant host policy's refusal, naming no credentialed CLI", command, err)
		}
	}
	if err := direct(d.c, "gh --version >/dev/null 2>&1 || true"); err != nil {
		t.Errorf("the owner's gh on the host: %v, want it run", err)
	}
	if n := d.securityEvents(t, app.EventCredentialedCLIDenied, "agent:bot"); n < 22 {
		t.Errorf("%d %s events, want one a refusal", n, app.EventCredentialedCLIDenied)
	}
	d.setAgentShell(t, false)
	code, _, errOut := d.agentShell(t, []string{"SENCLAW_TOKEN=" + strings.TrimSpace(secret)}, d.dir(t, "p"), "bash -c 'env docker ps'")
	if code == 0 || !strings.Contains(errOut, "credentialed CLI") {
		t.Errorf("deny, the agent shell's wrapped docker on the host: %d %s", code, errOut)
	}
	if code, out, errOut := d.cli(t, nil, "settings", "set", "exec.tenantHostPolicy=warn"); code != 0 {
		t.Fatalf("settings set: %d %s %s", code, out, errOut)
	}
	if err := direct(bot, "gh --version >/dev/null 2>&1 || true"); err != nil {
		t.Errorf("warn, the agent's gh on the direct backend: %v, want it run", err)
	}
	if code, out, _ := d.cli(t, nil, "settings"); code != 0 || !strings.Contains(out, "exec.credentialedCommands") || !strings.Contains(out, "vault") {
		t.Errorf("senclaw settings does not show exec.credentialedCommands: %s", out)
	}
}

// TestATenantsHostExecReachesNeitherTheSocketNorRootsFiles: a confined
// host exec runs as the engine's own user. The API's socket takes that
// user, with no token, for the owner (SO_PEERCRED), and Landlock before
// ABI 9 does not stop a connect to a pathname Unix socket: the seccomp
// filter must keep the tenant's command from the engine's api.sock and
// any abstract socket. A root engine's host exec is uid 0 with no
// capability, which file modes still let read root's own files in the
// system roots it reads (/etc/shadow, private keys): those must stay out
// of reach too.
func TestATenantsHostExecReachesNeitherTheSocketNorRootsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	secret := ""
	if os.Geteuid() == 0 {
		f, err := os.CreateTemp("/etc", "senclaw-hostexec-secret-")
		if err != nil {
			t.Fatal(err)
		}
		secret = f.Name()
		t.Cleanup(func() { os.Remove(secret) })
		f.WriteString("SECRET\n")
		f.Close()
		if err := os.Chmod(secret, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t)
	aEnv, aProject := d.tenantToken(t, "a")
	d.setAgentShell(t, false)
	for _, kv := range []string{"guard.protectedPaths=false", "exec.tenantHostPolicy=warn"} {
		if code, out, errOut := d.cli(t, nil, "settings", "set", kv); code != 0 {
			t.Fatalf("settings set %s: %d %s %s", kv, code, out, errOut)
		}
	}
	sock := apitype.SocketPath(filepath.Join(d.root, "run", "senclaw"))
	script := strings.Join([]string{
		`curl -s -o /dev/null -w 'STATUS:%{http_code}\n' --unix-socket ` + sock + ` http://senclaw/api/sandbox/settings`,
		`socat -u OPEN:/dev/null ABSTRACT-CONNECT:senclaw 2>&1 | grep -q 'socket(1' && echo NO:abstract`,
		`cat /etc/ssl/private/* /etc/gshadow 2>/dev/null | grep -q . && echo LEAK:etc`,
		`if [ -n "` + secret + `" ]; then cat "` + secret + `" 2>/dev/null && echo LEAK:root-file; fi`,
		`ln /etc/gshadow hl 2>/dev/null; cat hl 2>/dev/null | grep -q . && echo LEAK:hard-link`,
		`cat /usr/bin/env >/dev/null && echo CAN:system-roots`,
		`echo done`,
	}, "\n")
	code, stdout, errOut := d.agentShell(t, aEnv, aProject, script)
	if code != 0 || !strings.Contains(stdout, "done") {
		t.Fatalf("the tenant's host command: %d %q %s", code, stdout, errOut)
	}
	if strings.Contains(stdout, "STATUS:2") {
		t.Errorf("the tenant's confined host exec was answered by the engine's socket, as the owner: %s", stdout)
	}
	if !strings.Contains(stdout, "NO:abstract") || !strings.Contains(stdout, "CAN:system-roots") {
		t.Errorf("want no Unix socket made and the system roots read: %s %s", stdout, errOut)
	}
	if strings.Contains(stdout, "LEAK:") {
		t.Errorf("the confined host exec read root's own files: %s", stdout)
	}
	if r := d.lastRun(t); r.Isolation != "landlock (host exec)" {
		t.Errorf("the record says %q, want landlock (host exec)", r.Isolation)
	}
}

// TestAHostExecMakesNoSetuidFile: an agent's confined host exec runs as
// the engine's user, uid 0 for a root engine, and writes its project,
// which has no nosuid mount around it as a sandbox's has: a setuid or
// setgid copy of a program made there would run as root for any local
// user who reaches the project. chmod, open and mknod with those bits
// must fail, and another local user must not gain root from what the
// command left.
func TestAHostExecMakesNoSetuidFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	other := testutil.SecondUser(t)
	d := startDaemon(t)
	code, secret, _ := d.cli(t, nil, "tokens", "add", "--tools", "all", "bot")
	if code != 0 {
		t.Fatal("tokens add")
	}
	bot := []string{"SENCLAW_TOKEN=" + strings.TrimSpace(secret)}
	d.setAgentShell(t, false)
	if code, out, errOut := d.cli(t, nil, "settings", "set", "exec.tenantHostPolicy=warn"); code != 0 {
		t.Fatalf("settings set: %d %s %s", code, out, errOut)
	}
	project := d.dir(t, "suid-project")
	if err := os.Chmod(project, 0o755); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		`cp /usr/bin/id suid-id; chmod 4755 suid-id 2>/dev/null; chmod 2755 sgid-id 2>/dev/null`,
		`cp /usr/bin/id sgid-id; chmod g+s sgid-id 2>/dev/null`,
		`stat -c '%n %a' suid-id sgid-id`,
		`echo done`,
	}, "\n")
	code, stdout, errOut := d.agentShell(t, bot, project, script)
	if code != 0 || !strings.Contains(stdout, "done") {
		t.Fatalf("the agent's host command: %d %q %s", code, stdout, errOut)
	}
	if r := d.lastRun(t); r.Isolation != "landlock (host exec)" {
		t.Fatalf("the record says %q, want landlock (host exec)", r.Isolation)
	}
	for _, name := range []string{"suid-id", "sgid-id"} {
		fi, err := os.Stat(filepath.Join(project, name))
		if err != nil {
			t.Fatalf("%s: %v (%s %s)", name, err, stdout, errOut)
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("the host exec made %s %v, owned by uid %d", name, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid)
		}
	}
	out, _ := other.Command(filepath.Join(project, "suid-id"), "-u").CombinedOutput()
	if os.Geteuid() == 0 && strings.TrimSpace(string(out)) == "0" {
		t.Errorf("another local user ran the host exec's file as root: %s", out)
	}
}

// TestAHandEditOfTheOwnersPolicyHoldsForTheNextAgentShellRun: the owner
// switches the Agent shell back on by editing policy.json by hand; the
// very next command of an agent through the agent shell runs in a
// sandbox, not on the host as the switch said before the edit.
func TestAHandEditOfTheOwnersPolicyHoldsForTheNextAgentShellRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	code, secret, _ := d.cli(t, nil, "tokens", "add", "--tools", "all", "bot")
	if code != 0 {
		t.Fatal("tokens add")
	}
	bot := []string{"SENCLAW_TOKEN=" + strings.TrimSpace(secret)}
	d.setAgentShell(t, false)
	project := d.dir(t, "hand-edit")
	if code, out, errOut := d.agentShell(t, bot, project, "true"); code != 0 {
		t.Fatalf("the agent's command: %d %s %s", code, out, errOut)
	}
	if r := d.lastRun(t); r.Isolation != "landlock (host exec)" {
		t.Fatalf("with the switch off the record says %q, want landlock (host exec)", r.Isolation)
	}
	path := filepath.Join(d.root, "config", "senclaw", "policy.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`("sandboxed":\s*)false`).ReplaceAll(data, []byte("${1}true"))
	if string(edited) == string(data) {
		t.Fatalf("no agentShell.sandboxed false in %s", data)
	}
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := d.agentShell(t, bot, project, "true"); code != 0 {
		t.Fatalf("the agent's command after the edit: %d %s %s", code, out, errOut)
	}
	if r := d.lastRun(t); r.Isolation == "landlock (host exec)" || r.Isolation == "none" {
		t.Errorf("after the owner's hand edit switched the Agent shell on, the agent's command ran on the host (%q)", r.Isolation)
	}
}
