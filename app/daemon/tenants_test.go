package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/tenants"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// status is the HTTP status of err (0 for none, -1 for an error that is
// not the API's).
func status(err error) int {
	if err == nil {
		return 0
	}
	if ce, ok := err.(*client.Error); ok {
		return ce.Status
	}
	return -1
}

// addTenant makes tenant name with every tool allowed and returns a
// client that acts as it.
func addTenant(t *testing.T, d *testDaemon, name string) *client.Client {
	t.Helper()
	var added tenants.Added
	if err := d.c.Do(context.Background(), "POST", "/tenants", nil, map[string]any{"name": name, "tools": nil, "quota": map[string]any{"sandboxes": 4, "runs": 4, "diskMb": 512}}, &added); err != nil {
		t.Fatal(err)
	}
	return d.c.WithToken(added.Token.Secret)
}

// TestTwoTenantsNeverReachEachOther: against a real daemon, tenants a
// and b each see only their own sandboxes, runs, events, schedules and
// apps; every id of the other's answers 404 on every route (read, change,
// run, kill, delete), as an unknown id does, and is a security event;
// b's sandbox never reaches a's listen port through the proxy; their
// mounts stay in their own directories; the owner sees both.
func TestTwoTenantsNeverReachEachOther(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, b := addTenant(t, d, "a"), addTenant(t, d, "b")
	pol, _ := d.c.Policy(ctx)
	pol.SchedulerScript = true // a tenant's schedule runs sandboxed, or not at all
	if _, err := d.c.SetPolicy(ctx, *pol); err != nil {
		t.Fatal(err)
	}

	// The same name in both tenants: no conflict, each its own.
	sa, err := a.Create(ctx, app.SandboxConfig{Name: new("work")})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Create(ctx, app.SandboxConfig{Name: new("work")})
	if err != nil {
		t.Fatal(err)
	}
	if sa.Sandbox.Tenant != "a" || sb.Sandbox.Tenant != "b" {
		t.Fatalf("tenants recorded: %q %q", sa.Sandbox.Tenant, sb.Sandbox.Tenant)
	}
	if got, err := b.Sandbox(ctx, "work"); err != nil || got.ID != sb.Sandbox.ID {
		t.Fatalf("b's work by name: %v %v", got, err)
	}
	ra, err := a.Exec(ctx, sa.Sandbox.ID, client.RunBody{Command: "echo a-ran > mine.txt"}, nil)
	if err != nil || !ra.OK || ra.Run.Tenant != "a" || ra.Run.Principal != "tenant:a" {
		t.Fatalf("a's run: %+v %v", ra, err)
	}
	one, err := a.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: "echo once", Trace: true}}, nil)
	if err != nil || one.Run.Tenant != "a" {
		t.Fatalf("a's one-shot: %+v %v", one, err)
	}
	var sched struct {
		Schedule struct {
			ID string `json:"id"`
		} `json:"schedule"`
	}
	if err := a.Do(ctx, "POST", "/schedules", nil, map[string]any{"name": "nightly", "cron": "@daily", "code": "echo a"}, &sched); err != nil {
		t.Fatal(err)
	}
	appDir := benchApp(t, filepath.Join(d.root, "data", "tenants", "a", "workspace"), "a-notes", `{"enabled": true, "readMode": "strict", "network": "off"}`)
	var reg struct {
		App struct {
			ID     string `json:"id"`
			Tenant string `json:"tenant"`
		} `json:"app"`
	}
	if err := a.Do(ctx, "POST", "/api/space/apps", nil, map[string]any{"dir": appDir}, &reg); err != nil || reg.App.Tenant != "a" {
		t.Fatalf("a registers an app: %+v %v", reg, err)
	}

	// Every route of a's objects, as b: 404.
	sbx, run, sch, ap := "/sandboxes/"+sa.Sandbox.ID, "/runs/"+ra.Run.ID, "/schedules/"+sched.Schedule.ID, "/api/space/apps/"+reg.App.ID
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", sbx, nil}, {"PATCH", sbx, map[string]any{"cpus": 2}}, {"DELETE", sbx, nil},
		{"POST", sbx + "/exec", map[string]any{"command": "cat mine.txt"}}, {"POST", sbx + "/run", map[string]any{"language": "bash", "code": "ls"}},
		{"GET", sbx + "/files", nil}, {"GET", sbx + "/file?path=mine.txt", nil}, {"PUT", sbx + "/file", map[string]any{"path": "x", "content": "b"}},
		{"GET", sbx + "/stats", nil}, {"POST", sbx + "/kill", map[string]any{}}, {"POST", sbx + "/stop", nil},
		{"POST", sbx + "/mounts", map[string]any{"source": "/tmp"}}, {"POST", sbx + "/ports", map[string]any{"listen": []int{20000}}},
		{"GET", sbx + "/events", nil}, {"DELETE", sbx + "/events", nil},
		{"GET", "/sandboxes/" + one.Run.SandboxID + "/events", nil},
		{"GET", run, nil}, {"GET", run + "/log", nil}, {"POST", run + "/kill", nil},
		{"GET", sch, nil}, {"PATCH", sch, map[string]any{"code": "id"}}, {"DELETE", sch, nil}, {"POST", sch + "/run?wait=1", nil},
		{"POST", sch + "/pause", nil}, {"GET", sch + "/history", nil},
		{"GET", ap, nil}, {"POST", ap + "/start", nil}, {"POST", ap + "/stop", nil}, {"DELETE", ap, nil},
		{"GET", ap + "/logs", nil}, {"GET", ap + "/runtime", nil}, {"PUT", ap + "/sandbox", map[string]any{"enabled": false}},
	} {
		err := b.Do(ctx, c.method, c.path, nil, c.body, nil)
		if status(err) != 404 {
			t.Errorf("b: %s %s = %v, want 404", c.method, c.path, err)
		}
		if err != nil && strings.Contains(err.Error(), "tenant") {
			t.Errorf("b: %s %s: the answer names a tenant, which confirms the id: %v", c.method, c.path, err)
		}
	}
	// The lists: each its own; the owner both, and by tenant.
	for _, tc := range []struct {
		c     *client.Client
		query string
		want  []string
	}{{a, "", []string{sa.Sandbox.ID}}, {b, "", []string{sb.Sandbox.ID}}, {b, "?tenant=a", []string{sb.Sandbox.ID}}, {d.c, "?tenant=a", []string{sa.Sandbox.ID}}} {
		var page app.SandboxPage
		if err := tc.c.Do(ctx, "GET", "/sandboxes"+tc.query, nil, nil, &page); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range page.Sandboxes {
			got = append(got, s.ID)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("sandboxes%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	if all, _ := d.c.Sandboxes(ctx); len(all) < 2 {
		t.Errorf("the owner sees %d sandboxes", len(all))
	}
	if runs, _ := b.Runs(ctx, "", 50); len(runs) != 0 {
		t.Errorf("b lists a's runs: %v", runs)
	}
	if runs, _ := d.c.Runs(ctx, "", 50); len(runs) < 2 {
		t.Errorf("the owner lists %d runs", len(runs))
	}
	var list struct {
		Schedules []any `json:"schedules"`
		Apps      []any `json:"apps"`
	}
	_ = b.Do(ctx, "GET", "/schedules", nil, nil, &list)
	_ = b.Do(ctx, "GET", "/api/space/apps", nil, nil, &list)
	if len(list.Schedules) != 0 || len(list.Apps) != 0 {
		t.Errorf("b lists a's schedules or apps: %+v", list)
	}
	_ = d.c.Do(ctx, "GET", "/schedules", nil, nil, &list)
	_ = d.c.Do(ctx, "GET", "/api/space/apps", nil, nil, &list)
	if len(list.Schedules) != 1 || len(list.Apps) != 1 {
		t.Errorf("the owner's lists: %+v", list)
	}

	// A tenant's folders: in its own directory only.
	own := filepath.Join(d.root, "data", "tenants", "a", "workspace", "data")
	os.MkdirAll(own, 0o755)
	os.Chmod(own, 0o777)
	if _, err := a.AddMount(ctx, sa.Sandbox.ID, mount(own)); err != nil {
		t.Errorf("a mounts its own folder: %v", err)
	}
	outside := d.dir(t, "outside")
	for _, src := range []string{outside, filepath.Join(d.root, "data", "tenants", "a", "workspace")} {
		if _, err := b.AddMount(ctx, sb.Sandbox.ID, mount(src)); status(err) != 400 {
			t.Errorf("b mounts %s: %v, want 400", src, err)
		}
	}
	// A path the owner grants b is b's to mount, and still not a's.
	if err := d.c.Do(ctx, "PATCH", "/tenants/b", nil, map[string]any{"paths": []string{outside}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddMount(ctx, sb.Sandbox.ID, mount(outside)); err != nil {
		t.Errorf("b mounts the path the owner granted it: %v", err)
	}
	if _, err := a.AddMount(ctx, sa.Sandbox.ID, mount(outside)); status(err) != 400 {
		t.Errorf("a mounts the path granted to b: %v, want 400", err)
	}
	if _, err := a.Create(ctx, app.SandboxConfig{FsMode: new("open")}); status(err) != 400 {
		t.Errorf("a tenant's open sandbox: %v", err)
	}
	if _, err := a.Create(ctx, app.SandboxConfig{Backend: new("direct")}); status(err) != 400 {
		t.Errorf("a tenant's direct sandbox: %v", err)
	}

	// What it installs goes to its runtime/, shared by its sandboxes.
	if r, err := a.Exec(ctx, sa.Sandbox.ID, client.RunBody{Command: `mkdir -p "$PYTHONUSERBASE" && echo kept > "$PYTHONUSERBASE/marker"`}, nil); err != nil || !r.OK {
		t.Fatalf("writing the runtime: %+v %v", r, err)
	}
	if r, err := a.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: `cat "$PYTHONUSERBASE/marker"`}}, nil); err != nil || strings.TrimSpace(r.Stdout) != "kept" {
		t.Fatalf("another sandbox of a reads its runtime: %+v %v", r, err)
	}
	if r, err := b.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: `cat "$PYTHONUSERBASE/marker"`}}, nil); err == nil && strings.Contains(r.Stdout, "kept") {
		t.Fatalf("b reads a's runtime: %+v", r)
	}

	// Listen ports: a serves, a reaches it, b and the owner never do.
	port := testutil.FreePort(t)
	srv, err := a.Create(ctx, app.SandboxConfig{Name: new("srv"), Listen: []int{port}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, srv.Sandbox.ID, client.RunBody{Command: fmt.Sprintf("python3 -m http.server %d --bind 127.0.0.1", port), Background: true}, nil); err != nil {
		t.Fatal(err)
	}
	fetch := fmt.Sprintf(`python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:%d/', timeout=5).status)"`, port)
	reach := func(c *client.Client) string {
		r, err := c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: fetch}, Sandbox: app.SandboxConfig{Loopback: []int{port}}}, nil)
		if err != nil {
			return err.Error()
		}
		return r.Stdout + r.Stderr
	}
	testutil.WaitFor(t, 20*time.Second, "a reaches its own listen port", func() bool { return strings.Contains(reach(a), "200") })
	for name, c := range map[string]*client.Client{"b": b, "the owner": d.c} {
		if got := reach(c); strings.Contains(got, "200") {
			t.Errorf("%s reached a's listen port: %s", name, got)
		}
	}
	// The owner's own services on this machine (no sandbox's): never a
	// tenant's, whatever its loopback rules; the owner's sandbox may.
	hostPort := testutil.FreePort(t)
	hostSrv := exec.Command("python3", "-m", "http.server", fmt.Sprint(hostPort), "--bind", "127.0.0.1")
	hostSrv.Dir = t.TempDir()
	if err := hostSrv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { hostSrv.Process.Kill(); hostSrv.Wait() }()
	hostFetch := strings.Replace(fetch, fmt.Sprint(port), fmt.Sprint(hostPort), 1)
	reachHost := func(c *client.Client) string {
		r, err := c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: hostFetch}, Sandbox: app.SandboxConfig{Loopback: []int{hostPort}}}, nil)
		if err != nil {
			return err.Error()
		}
		return r.Stdout + r.Stderr
	}
	testutil.WaitFor(t, 20*time.Second, "the owner's sandbox reaches a service of this machine it names", func() bool { return strings.Contains(reachHost(d.c), "200") })
	if got := reachHost(a); strings.Contains(got, "200") {
		t.Errorf("a tenant reached a service of this machine: %s", got)
	}

	// The owner's allowlist is the owner's sandboxes': a tenant reads of
	// it only what lies in its own directory.
	shared := testutil.SandboxDirIn(t, "/var/tmp", "sc-allow-") // not under /tmp, which is each sandbox's own
	os.WriteFile(filepath.Join(shared, "owners.txt"), []byte("owner-only\n"), 0o644)
	st, _ := d.c.Settings(ctx)
	if _, err := d.c.SetSettings(ctx, map[string]any{"allowlist": append(st.Allowlist, shared)}); err != nil {
		t.Fatal(err)
	}
	readIt := func(c *client.Client) string {
		r, err := c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: "cat " + filepath.Join(shared, "owners.txt")}, Sandbox: app.SandboxConfig{FsMode: new("allowlist")}}, nil)
		if err != nil {
			return err.Error()
		}
		return r.Stdout + r.Stderr
	}
	if got := readIt(d.c); !strings.Contains(got, "owner-only") {
		t.Errorf("the owner's allowlisted file in the owner's sandbox: %q", got)
	}
	if got := readIt(a); strings.Contains(got, "owner-only") {
		t.Errorf("a tenant read the owner's allowlisted file: %q", got)
	}

	// Each of b's attempts is a security event.
	var events struct {
		Events []struct {
			Kind, Principal, Request string
		} `json:"events"`
	}
	if err := d.c.Do(ctx, "GET", "/security-events", url.Values{"kind": {"security.cross_tenant_denied"}, "principal": {"tenant:b"}, "limit": {"1000"}}, nil, &events); err != nil {
		t.Fatal(err)
	}
	proxied := 0
	for _, ev := range events.Events {
		if strings.HasPrefix(ev.Request, fmt.Sprintf("connect 127.0.0.1:%d ", port)) {
			proxied++
		}
	}
	if len(events.Events) < 25 || proxied == 0 {
		t.Errorf("b's cross-tenant refusals recorded: %d, %d of them by the proxy", len(events.Events), proxied)
	}
}

func mount(src string) backends.Mount { return backends.Mount{Source: src} }

// TestATenantsQuotasHold: a tenant holds at most its quota of sandboxes
// and runs at once (429 naming the quota), and its sandboxes' disk quota
// is at most its own.
func TestATenantsQuotasHold(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var added tenants.Added
	if err := d.c.Do(ctx, "POST", "/tenants", nil, map[string]any{"name": "small", "tools": nil, "quota": map[string]any{"sandboxes": 1, "runs": 1, "diskMb": 64}}, &added); err != nil {
		t.Fatal(err)
	}
	q := d.c.WithToken(added.Token.Secret)
	one, err := q.Create(ctx, app.SandboxConfig{DiskMB: new(2048)})
	if err != nil {
		t.Fatal(err)
	}
	if one.Sandbox.DiskMB != 64 {
		t.Errorf("a sandbox's disk quota: %d MB, want the tenant's 64", one.Sandbox.DiskMB)
	}
	if _, err := q.Create(ctx, app.SandboxConfig{}); status(err) != 429 || !strings.Contains(err.Error(), "quota") {
		t.Errorf("a second sandbox past the quota: %v", err)
	}
	bg, err := q.Exec(ctx, one.Sandbox.ID, client.RunBody{Command: "sleep 30", Background: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.KillRun(ctx, bg.Run.ID)
	if _, err := q.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: "true"}}, nil); status(err) != 429 || !strings.Contains(err.Error(), "quota") {
		t.Errorf("a second run at once past the quota: %v", err)
	}
	if _, err := d.c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: "true"}}, nil); err != nil {
		t.Errorf("the owner's run while the tenant is at its quota: %v", err)
	}
}

// TestATenantsDiskQuotaHoldsItsWholeDirectory: a tenant's disk quota
// bounds its directory while its runs go on, not only when one starts.
// Before, a sandbox whose project dir lay in the tenant's workspace/ (a
// project has no quota of its own) wrote 90 MB there in one run under a
// 16 MB quota; the next run was refused, the disk already filled.
func TestATenantsDiskQuotaHoldsItsWholeDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var added tenants.Added
	if err := d.c.Do(ctx, "POST", "/tenants", nil, map[string]any{"name": "tight", "tools": nil, "quota": map[string]any{"sandboxes": 2, "runs": 2, "diskMb": 16}}, &added); err != nil {
		t.Fatal(err)
	}
	q := d.c.WithToken(added.Token.Secret)
	project := filepath.Join(d.root, "data", "tenants", "tight", "workspace")
	sb, err := q.Create(ctx, app.SandboxConfig{ProjectDir: &project})
	if err != nil {
		t.Fatal(err)
	}
	// Chunks with pauses: the watchdog counts as the files change.
	res, err := q.Exec(ctx, sb.Sandbox.ID, client.RunBody{Command: "for i in 1 2 3 4 5 6 7 8 9; do head -c 10000000 /dev/zero > f$i || exit 1; sleep 0.3; done; echo wrote", TimeoutMs: 60000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Run.Killed, "disk quota") || !strings.Contains(res.Run.Killed, "tenant tight") {
		t.Errorf("a run writing 90 MB into a 16 MB tenant's directory: killed %q, stdout %q; want it killed by the tenant's disk quota", res.Run.Killed, res.Run.Stdout)
	}
	if !slicesContainsPart(res.Run.Enforced, "tenant disk: watchdog") {
		t.Errorf("the record's enforced lines do not name the tenant's count: %q", res.Run.Enforced)
	}
}

// slicesContainsPart reports whether a line of lines contains part.
func slicesContainsPart(lines []string, part string) bool {
	for _, l := range lines {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}

// TestATenantsAgentShellNeverRunsUnconfinedOnTheHost: with the Agent
// shell switch off, a tenant's command never runs on this machine with
// no sandbox, where it would reach every other tenant's directory: under
// exec.tenantHostPolicy warn (the default) its hook lets it through and
// it runs confined by Landlock (the record says "landlock (host exec)"),
// writing nothing outside its project; under deny its hook denies the
// command and the agent shell refuses it, recorded as a refused run.
// With the switch on, the same command runs in the tenant's sandbox.
func TestATenantsAgentShellNeverRunsUnconfinedOnTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	d := startDaemon(t)
	d.setAgentShell(t, false)
	ctx := context.Background()
	var added tenants.Added
	if err := d.c.Do(ctx, "POST", "/tenants", nil, map[string]any{"name": "a", "tools": nil}, &added); err != nil {
		t.Fatal(err)
	}
	as := []string{"SENCLAW_TOKEN=" + added.Token.Secret}
	project := filepath.Join(d.root, "data", "tenants", "a", "workspace", "project")
	if err := os.MkdirAll(project, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(project, 0o777)
	marker := filepath.Join(d.dir(t, "host"), "reached")
	command := "touch " + marker + "; echo ran"

	hookSays := func() string {
		hook := exec.Command(d.bin, "hook", "claude-code")
		hook.Env = append(append([]string{}, d.env...), as...)
		input, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "cwd": project, "tool_name": "Bash", "tool_input": map[string]any{"command": command}})
		hook.Stdin = strings.NewReader(string(input))
		out, _ := hook.Output()
		return string(out)
	}
	// The agent shell, run in the project as an agent's shell is.
	shell := func(env []string, project, command string) (int, string, string) {
		cmd := exec.Command(d.bin, "agent-shell", "--agent", "claude-code", "--project", project, "-c", command)
		cmd.Env, cmd.Dir = append(append([]string{}, d.env...), env...), project
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
	if out := hookSays(); strings.Contains(out, "deny") {
		t.Errorf("the tenant's hook with the Agent shell off under warn: %s, want the command let through to the agent shell", out)
	}
	if code, stdout, errOut := shell(as, project, command); code != 0 || !strings.Contains(stdout, "ran") {
		t.Errorf("the tenant's agent shell with the switch off under warn: %d %q %q, want it run confined", code, stdout, errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a tenant's host command wrote outside its project")
	}
	if r := d.lastRun(t); r.Tenant != "a" || r.Source != "agent-shell" || r.Isolation != "landlock (host exec)" {
		t.Errorf("the confined run's record: %+v", r)
	}

	if code, out, errOut := d.cli(t, nil, "settings", "set", "exec.tenantHostPolicy=deny"); code != 0 {
		t.Fatalf("settings set: %d %s %s", code, out, errOut)
	}
	if out := hookSays(); !strings.Contains(out, "deny") || !strings.Contains(out, "Agent shell switch is off") {
		t.Errorf("the tenant's hook with the Agent shell off under deny: %s, want a denial saying why", out)
	}
	code, stdout, errOut := shell(as, project, command)
	if code == 0 || strings.Contains(stdout, "ran") || !strings.Contains(errOut, `tenant "a"`) {
		t.Errorf("the tenant's agent shell with the switch off under deny: %d %q %q, want a refusal", code, stdout, errOut)
	}
	if r := d.lastRun(t); r.Tenant != "a" || r.Source != "agent-shell" || !strings.HasPrefix(r.Isolation, "refused") {
		t.Errorf("the refused run's record: %+v", r)
	}

	if code, out, errOut := d.cli(t, nil, "settings", "set", "exec.tenantHostPolicy=warn"); code != 0 {
		t.Fatalf("settings set: %d %s %s", code, out, errOut)
	}
	// The owner's own agents' commands run there too (confined).
	if code, stdout, errOut := shell(nil, d.dir(t, "owners"), "echo owner-ran"); code != 0 || !strings.Contains(stdout, "owner-ran") {
		t.Errorf("the owner's agent shell with the switch off: %d %q %q", code, stdout, errOut)
	}

	d.setAgentShell(t, true)
	if code, stdout, errOut := shell(as, project, command); code != 0 || !strings.Contains(stdout, "ran") {
		t.Fatalf("the tenant's agent shell with the switch on: %d %q %q", code, stdout, errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the sandboxed command wrote the host folder outside the tenant's project")
	}
	if r := d.lastRun(t); r.Tenant != "a" || r.Isolation == "none" || strings.HasPrefix(r.Isolation, "refused") {
		t.Errorf("the sandboxed run's record: %+v", r)
	}
}
