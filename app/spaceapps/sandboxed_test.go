package spaceapps

import (
	"github.com/senclaw/sandbox/backends"

	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestTheExampleAppRunsSandboxedAndHealthy registers examples/space-apps
// (copied into the engine's apps/), starts it under bwrap and uses it: its
// SQLite file lands next to its code in its own directory, its log has a
// banner saying the isolation, its runtime shows the tree and its
// listening socket, and a stop is graceful and remembered.
func TestTheExampleAppRunsSandboxedAndHealthy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	src, err := filepath.Abs("../../examples/space-apps")
	if err != nil {
		t.Fatal(err)
	}
	v := f.register(t, src, false)
	if v.ID != "notes" || v.InPlace || v.Dir != filepath.Join(f.e.DataDir(), "apps", "notes") {
		t.Fatalf("registered %+v", v)
	}
	v = f.start(t, "notes")
	if v.State != StateRunning || v.Sandbox.Isolation != "bwrap" || v.Pid <= 0 || v.Port == 0 || v.Launches != 1 || v.NeedsRestart {
		t.Fatalf("started %+v", v)
	}
	if got := get(t, v.Port, "/health"); !strings.Contains(got, `"ok": true`) {
		t.Fatalf("/health: %q", got)
	}
	if _, err := os.Stat(filepath.Join(v.Dir, "notes.db")); err != nil {
		t.Fatalf("the SQLite file is not next to the app's code: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, "notes.db")); err == nil {
		t.Fatal("the app wrote into the folder it was copied from")
	}
	rt, err := f.s.Runtime(context.Background(), "notes")
	if err != nil {
		t.Fatal(err)
	}
	var listen bool
	for _, s := range rt.Sockets {
		if s.State == "LISTEN" && strings.HasSuffix(s.Local, ":"+itoa(v.Port)) {
			listen = true
		}
	}
	for _, s := range rt.Sockets {
		if strings.HasSuffix(s.Local, ":3128") || strings.Contains(s.Local, "listen-") {
			t.Errorf("the forwarder's socket %+v is listed as the app's", s)
		}
	}
	if !listen || rt.Launch == nil || rt.Launch.Isolation != "bwrap" || rt.Launch.Env["PORT"] != itoa(v.Port) || len(rt.Processes) == 0 {
		t.Fatalf("runtime %+v (launch %+v)", rt, rt.Launch)
	}
	if _, leaked := rt.Launch.Env["SENCLAW_APP_TOKEN"]; leaked {
		t.Fatal("an app without daemonApi got an API token")
	}
	lc, err := f.s.Logs("notes", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lc.Text, "=== senclaw: launch 1 of notes") || !strings.Contains(lc.Text, "isolation bwrap") || !strings.Contains(lc.Text, "notes: serving on") {
		t.Fatalf("log %q", lc.Text)
	}
	if strings.HasPrefix(lc.Files[0], v.Dir) {
		t.Fatalf("the log %s is inside the app's directory", lc.Files[0])
	}
	page, _ := f.e.RunsPage(sandboxID("notes"), app.ListQuery{Limit: 5})
	runs := page.Runs
	if len(runs) != 1 || runs[0].Source != app.SourceSpaceApp || runs[0].Isolation != "bwrap" {
		t.Fatalf("run records %+v", runs)
	}
	stopped, err := f.s.Stop(context.Background(), "notes")
	if err != nil {
		t.Fatal(err)
	}
	if stopped.State != StateStopped || !stopped.StoppedByUser || stopped.Pid != 0 {
		t.Fatalf("stopped %+v", stopped)
	}
	page, _ = f.e.RunsPage(sandboxID("notes"), app.ListQuery{Limit: 5})
	runs = page.Runs
	if runs[0].State != "done" {
		t.Fatalf("the launch's record after the stop: %+v", runs[0])
	}
}

// TestAStrictAppCannotWriteOutsideItsDirectoryOrReadSecrets: writes land
// only in the app's own directory; the home's secrets and the engine's
// own data are not there to read.
func TestAStrictAppCannotWriteOutsideItsDirectoryOrReadSecrets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	outside, err := os.MkdirTemp("/var/tmp", "sapp-outside-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(outside) })
	must(t, os.Chmod(outside, 0o777))
	for _, mode := range []string{"strict", "open"} {
		id := "probe-" + mode
		dir := writeApp(t, probeManifest(id, `{"enabled": true, "readMode": "`+mode+`", "network": "off"}`), map[string]string{"probe.py": probeApp})
		f.register(t, dir, false)
		v := f.start(t, id)
		if got := get(t, v.Port, "/write?path="+filepath.Join(v.Dir, "inside.txt")); got != "wrote" {
			t.Errorf("%s: writing its own directory: %q", mode, got)
		}
		if got := get(t, v.Port, "/write?path="+filepath.Join(outside, mode+".txt")); !strings.Contains(got, "error") {
			t.Errorf("%s: a write outside its directory: %q", mode, got)
		}
		if _, err := os.Stat(filepath.Join(outside, mode+".txt")); err == nil {
			t.Errorf("%s: the app wrote outside its directory", mode)
		}
		for _, secret := range []string{filepath.Join(f.home, ".ssh", "id_rsa"), filepath.Join(f.e.DataDir(), "senclaw.db"), filepath.Join(f.e.DataDir(), "app-logs", id, "runtime.log")} {
			if got := get(t, v.Port, "/read?path="+secret); !strings.Contains(got, "error") {
				t.Errorf("%s: the app read %s: %q", mode, secret, got)
			}
		}
		env := get(t, v.Port, "/env")
		if strings.Contains(env, "SENCLAW_APP_TOKEN") || strings.Contains(env, os.Getenv("HOME")+"\"") && os.Getenv("HOME") != v.Dir {
			t.Errorf("%s: environment %s", mode, env)
		}
		if _, err := f.s.Stop(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNetworkModesAreEnforced: hosts reaches an allowed host through the
// proxy and is refused elsewhere with the denial counted; a hosts edit
// applies live without needing a restart; off reaches nothing; all
// reaches public hosts but not this machine's services.
func TestNetworkModesAreEnforced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	fetch := func(port int, url string) string { return get(t, port, "/fetch?url="+url) }
	allowed := "http://example.test:" + itoa(f.remote) + "/"
	other := "http://other.test:" + itoa(f.remote) + "/"
	local := "http://127.0.0.1:" + itoa(f.local) + "/"

	dir := writeApp(t, probeManifest("hosts", `{"enabled": true, "readMode": "strict", "network": "hosts", "hosts": ["https://example.test/docs"]}`), map[string]string{"probe.py": probeApp})
	f.register(t, dir, false)
	v := f.start(t, "hosts")
	if got := fetch(v.Port, allowed); !strings.Contains(got, "fetched: remote-ok example.test") {
		t.Errorf("hosts: the allowed host: %q", got)
	}
	if got := fetch(v.Port, other); !strings.Contains(got, "http 403") || !strings.Contains(got, "other.test") {
		t.Errorf("hosts: another host: %q", got)
	}
	rt, err := f.s.Runtime(ctx, "hosts")
	must(t, err)
	if rt.Proxy.Denied < 1 || !slices.Contains(rt.Proxy.RecentDenied, "other.test") || rt.Proxy.Allowed < 1 {
		t.Errorf("hosts: proxy counts %+v", rt.Proxy)
	}
	row, _ := f.s.Get("hosts")
	if row.Sandbox.Denied < 1 || row.Sandbox.HostCount != 1 || row.Sandbox.Network != NetworkHosts {
		t.Errorf("hosts: row %+v", row.Sandbox)
	}
	// A hosts edit applies to the running app at once.
	hosts := []string{"example.test", "other.test"}
	reply, err := f.s.PutSandbox(ctx, "hosts", SandboxPatch{Hosts: &hosts})
	must(t, err)
	if !slices.Equal(reply.AppliedLive, []string{"hosts"}) || len(reply.PendingRestart) != 0 || reply.NeedsRestart {
		t.Errorf("hosts edit reply %+v", reply)
	}
	if got := fetch(v.Port, other); !strings.Contains(got, "fetched: remote-ok other.test") {
		t.Errorf("hosts: after the live edit, the added host: %q", got)
	}
	if row, _ := f.s.Get("hosts"); row.NeedsRestart || row.Pid != v.Pid {
		t.Errorf("after the live edit: needs restart %v, pid %d (was %d)", row.NeedsRestart, row.Pid, v.Pid)
	}
	// A launch-fixed change says so.
	off := "off"
	reply, err = f.s.PutSandbox(ctx, "hosts", SandboxPatch{Network: &off})
	must(t, err)
	if !slices.Equal(reply.PendingRestart, []string{"network"}) || !reply.NeedsRestart || len(reply.AppliedLive) != 0 {
		t.Errorf("network edit reply %+v", reply)
	}
	if got := fetch(v.Port, allowed); !strings.Contains(got, "fetched") {
		t.Errorf("before the restart the running app keeps what it launched with: %q", got)
	}
	r, err := f.s.Restart(ctx, "hosts", true)
	must(t, err)
	if !r.OK || r.App.NeedsRestart {
		t.Fatalf("restart %+v", r)
	}
	if got := fetch(r.App.Port, allowed); strings.Contains(got, "fetched") {
		t.Errorf("off: the allowed host was reached: %q", got)
	}
	if got := fetch(r.App.Port, local); strings.Contains(got, "local-ok") {
		t.Errorf("off: this machine's service was reached: %q", got)
	}

	dir = writeApp(t, probeManifest("all", `{"enabled": true, "network": "all"}`), map[string]string{"probe.py": probeApp})
	f.register(t, dir, false)
	v = f.start(t, "all")
	if got := fetch(v.Port, other); !strings.Contains(got, "fetched: remote-ok other.test") {
		t.Errorf("all: a public host: %q", got)
	}
	if got := fetch(v.Port, local); strings.Contains(got, "local-ok") {
		t.Errorf("all: this machine's service was reached without a loopback rule: %q", got)
	}
	loop := []int{f.local}
	if _, err := f.s.PutSandbox(ctx, "all", SandboxPatch{Loopback: &loop}); err != nil {
		t.Fatal(err)
	}
	r, err = f.s.Restart(ctx, "all", true)
	must(t, err)
	if got := fetch(r.App.Port, local); !strings.Contains(got, "local-ok") {
		t.Errorf("all: the loopback rule did not open this machine's service: %q", got)
	}
}

// TestEnablingTheSandboxOfARunningAppNeedsARestart: an app running with
// no sandbox reads "needs restart" as soon as its sandbox is enabled
// (configured with a sandbox, running without one), and after a restart
// it runs under bwrap and the flag is gone.
func TestEnablingTheSandboxOfARunningAppNeedsARestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	dir := writeApp(t, probeManifest("plain", `{"enabled": false}`), map[string]string{"probe.py": probeApp})
	f.register(t, dir, false)
	v := f.start(t, "plain")
	if v.Sandbox.Isolation != "none" || v.Sandbox.Enabled || v.NeedsRestart {
		t.Fatalf("started without a sandbox: %+v", v.Sandbox)
	}
	env := get(t, v.Port, "/env")
	if strings.Contains(env, "SENCLAW_SANDBOX") || !strings.Contains(env, `"HOME": "`+v.Dir+`"`) {
		t.Fatalf("the unsandboxed app's environment: %s", env)
	}
	on := true
	reply, err := f.s.PutSandbox(ctx, "plain", SandboxPatch{Enabled: &on})
	must(t, err)
	if !reply.NeedsRestart || !slices.Equal(reply.PendingRestart, []string{"enabled"}) || !slices.Contains(reply.Sandbox.NeedsRestartReasons, "configured with a sandbox, running without one") {
		t.Fatalf("reply %+v", reply)
	}
	if got := f.attention.all(); !slices.Contains(got, "plain: needs restart: Probe plain") {
		t.Errorf("attention %v", got)
	}
	row, _ := f.s.Get("plain")
	if !row.NeedsRestart || row.Sandbox.Isolation != "none" {
		t.Fatalf("row %+v", row)
	}
	r, err := f.s.Restart(ctx, "plain", true)
	must(t, err)
	if r.App.Sandbox.Isolation != "bwrap" || r.App.NeedsRestart || len(r.App.NeedsRestartReasons) != 0 {
		t.Fatalf("after the restart %+v", r.App)
	}
}

// TestAPortHeldByAForeignProcessIsReportedAndLeftAlone: the app is not
// started, its state names the holder, and the holder survives; a holder
// that runs from the app's own directory means it runs outside the
// engine, and the row reads needs restart.
func TestAPortHeldByAForeignProcessIsReportedAndLeftAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	port := freeTestPort(t)
	foreignDir := t.TempDir()
	foreign := startServer(t, foreignDir, port)
	manifest := `{"id": "fixed", "name": "Fixed", "runtime": {"start": "python3 probe.py", "port": ` + itoa(port) + `}, "sandbox": {"enabled": true}}`
	dir := writeApp(t, manifest, map[string]string{"probe.py": probeApp})
	v := f.register(t, dir, true)
	_, err := f.s.Start(ctx, "fixed", true)
	var ce *app.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "port taken by PID "+itoa(foreign.Process.Pid)+" (") || !strings.Contains(err.Error(), "http.server") {
		t.Fatalf("start with the port held: %v", err)
	}
	row, _ := f.s.Get("fixed")
	if row.State != StatePortTaken || !strings.Contains(row.StateText, "port taken by PID") || row.PortHolder == nil || row.PortHolder.Pid != foreign.Process.Pid || row.NeedsRestart {
		t.Fatalf("row %+v", row)
	}
	if err := foreign.Process.Signal(syscallZero); err != nil {
		t.Fatalf("the foreign process did not survive: %v", err)
	}
	stopServer(foreign)

	// The same port held by a server started from the app's directory.
	outside := startServer(t, v.Dir, port)
	_, err = f.s.Start(ctx, "fixed", true)
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "running outside the engine") {
		t.Fatalf("start with the app running outside: %v", err)
	}
	row, _ = f.s.Get("fixed")
	if row.State != StateOutside || !row.NeedsRestart || row.Pid != outside.Process.Pid || !slices.ContainsFunc(row.NeedsRestartReasons, func(s string) bool { return strings.Contains(s, "outside the engine") }) {
		t.Fatalf("row %+v", row)
	}
	if err := outside.Process.Signal(syscallZero); err != nil {
		t.Fatalf("the process outside the engine was killed: %v", err)
	}
	stopServer(outside)
	v = f.start(t, "fixed")
	if v.State != StateRunning || v.NeedsRestart {
		t.Fatalf("once the port is free: %+v", v)
	}
}

// TestRequirementsAreCheckedAtRegisterAndBeforeEveryLaunch.
func TestRequirementsAreCheckedAtRegisterAndBeforeEveryLaunch(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	must(t, os.Chmod(bin, 0o755))
	tool := filepath.Join(bin, "senclaw-test-tool")
	must(t, os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755))
	f := newFixture(t, func(_ *app.Options, o *Options) { o.SystemPath = bin + ":/usr/bin:/bin" })
	ctx := context.Background()
	m := func(req string) string {
		return `{"id": "req", "name": "Req", "runtime": {"start": "python3 probe.py"}, "requires": ` + req + `}`
	}
	cases := []struct{ req, field, says string }{
		{`{"bin": ["senclaw-test-tool", "no-such-tool-xyz"]}`, "requires.bin", "no-such-tool-xyz"},
		{`{"python": "99.1"}`, "requires.python", "needs 99.1 or later"},
		{`{"env": ["NOTES_TOKEN"]}`, "requires.env", "NOTES_TOKEN"},
	}
	for _, c := range cases {
		_, err := f.s.Register(ctx, RegisterRequest{Dir: writeApp(t, m(c.req), map[string]string{"probe.py": probeApp})})
		var fe *app.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.says) {
			t.Errorf("requires %s: %v", c.req, err)
		}
	}
	if apps, _ := f.s.List(ctx, "*"); len(apps) != 0 {
		t.Fatalf("a refused registration left %d apps", len(apps))
	}
	dir := writeApp(t, m(`{"bin": ["senclaw-test-tool"], "python": "3", "env": ["NOTES_TOKEN"]}`), map[string]string{"probe.py": probeApp})
	if _, err := f.s.Register(ctx, RegisterRequest{Dir: dir, Env: map[string]string{"NOTES_TOKEN": "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	v := f.start(t, "req")
	if rt, _ := f.s.Runtime(ctx, "req"); rt.Launch.Env["NOTES_TOKEN"] == "s3cret" || rt.Launch.Env["NOTES_TOKEN"] == "" {
		t.Errorf("the secret's value is shown: %q", rt.Launch.Env["NOTES_TOKEN"])
	}
	if got := get(t, v.Port, "/env"); !strings.Contains(got, `"NOTES_TOKEN": "s3cret"`) {
		t.Errorf("the app did not get its environment: %s", got)
	}
	_, _ = f.s.Stop(ctx, "req")
	must(t, os.Remove(tool))
	_, err := f.s.Start(ctx, "req", true)
	var fe *app.FieldError
	if !errors.As(err, &fe) || fe.Field != "requires.bin" || !strings.Contains(err.Error(), "senclaw-test-tool") {
		t.Fatalf("start with the program gone: %v", err)
	}
	if row, _ := f.s.Get("req"); row.State != StateFailed || !strings.Contains(row.StateText, "senclaw-test-tool") {
		t.Fatalf("row %+v", row)
	}
}

var syscallZero = syscall.Signal(0)

func freeTestPort(t *testing.T) int { return testutil.FreePort(t) }

// startServer starts a plain Python web server on port from dir, as a
// person would outside the engine, and waits until it listens.
func startServer(t *testing.T, dir string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("python3", "-m", "http.server", "--bind", "127.0.0.1", itoa(port))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	must(t, cmd.Start())
	t.Cleanup(func() { stopServer(cmd) })
	testutil.WaitFor(t, 10*time.Second, "the foreign server to listen", func() bool { return !portFree(port) })
	return cmd
}

func stopServer(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// TestFoldersAreSeenInTheAppsDirectory: a read-only folder can be read and
// not written, a read-write one both, and both appear in the app's
// directory under their names.
func TestFoldersAreSeenInTheAppsDirectory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ro, rw := testutil.SandboxDir(t, "sapp-ro-"), testutil.SandboxDir(t, "sapp-rw-")
	for _, d := range []string{ro, rw} {
		must(t, os.Chmod(d, 0o777))
		must(t, os.WriteFile(filepath.Join(d, "data.txt"), []byte("folder data"), 0o666))
	}
	sandbox := `{"enabled": true, "readMode": "strict", "network": "off", "folders": [{"path": "` + ro + `", "readOnly": true}, {"path": "` + rw + `"}]}`
	dir := writeApp(t, probeManifest("folders", sandbox), map[string]string{"probe.py": probeApp})
	f.register(t, dir, false)
	v := f.start(t, "folders")
	in := func(d, name string) string { return filepath.Join(v.Dir, filepath.Base(d), name) }
	if got := get(t, v.Port, "/read?path="+in(ro, "data.txt")); got != "read: folder data" {
		t.Errorf("reading the read-only folder: %q", got)
	}
	if got := get(t, v.Port, "/write?path="+in(ro, "new.txt")); !strings.Contains(got, "error") {
		t.Errorf("writing the read-only folder: %q", got)
	}
	if got := get(t, v.Port, "/write?path="+in(rw, "new.txt")); got != "wrote" {
		t.Errorf("writing the read-write folder: %q", got)
	}
	if _, err := os.Stat(filepath.Join(rw, "new.txt")); err != nil {
		t.Errorf("the write did not reach the read-write folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ro, "new.txt")); err == nil {
		t.Error("the read-only folder was written")
	}
}

// TestHostsModeKeepsToTheHTTPRules: an app in the hosts mode with an
// allowHttp rule gets only the paths the rule allows from its host (the
// others are refused 403 naming the rule), and an edit of the rules
// applies to the running app at once.
func TestHostsModeKeepsToTheHTTPRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	host := "example.test:" + itoa(f.remote)
	dir := writeApp(t, probeManifest("web", `{"enabled": true, "readMode": "strict", "network": "hosts", "hosts": ["example.test"],
		"allowHttp": [{"host": "`+host+`", "methods": ["GET"], "paths": ["/docs/"]}]}`), map[string]string{"probe.py": probeApp})
	f.register(t, dir, false)
	v := f.start(t, "web")
	if got := get(t, v.Port, "/fetch?url=http://"+host+"/docs/a"); !strings.Contains(got, "fetched: remote-ok") {
		t.Errorf("an allowed path: %q", got)
	}
	if got := get(t, v.Port, "/fetch?url=http://"+host+"/admin"); !strings.Contains(got, "http 403") || !strings.Contains(got, "allowHttp "+host+": GET on /docs/") || !strings.Contains(got, "add /admin") {
		t.Errorf("a path no rule allows: %q", got)
	}
	rules := []backends.HTTPRule{{Host: host, Methods: []string{"GET"}}}
	reply, err := f.s.PutSandbox(ctx, "web", SandboxPatch{AllowHTTP: &rules})
	must(t, err)
	if !slices.Equal(reply.AppliedLive, []string{"allowHttp"}) || reply.NeedsRestart {
		t.Errorf("allowHttp edit reply %+v", reply)
	}
	if got := get(t, v.Port, "/fetch?url=http://"+host+"/admin"); !strings.Contains(got, "fetched: remote-ok") {
		t.Errorf("after the live edit: %q", got)
	}
}
