package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// The remote engine tests run against a second Docker daemon on this
// machine that stands in for one on another machine
// (scripts/docker-remote.sh): TLS on 127.0.0.1 only, and a mount
// namespace in which the tests' engine dirs (under /tmp) do not exist,
// so a bind of an engine path fails there as it would elsewhere.

// remoteEngine is an engine with r as its named engine "far" and the
// test image as its default; Start has run.
func remoteEngine(t *testing.T, r testutil.RemoteDocker, opts ...engineOpt) *Engine {
	t.Helper()
	e := newTestEngine(t, nil, opts...)
	s := e.Settings()
	s.DefaultImage = dockerTestImage
	s.Engines = []EngineSettings{{Name: "far", Host: r.Host, CACert: r.CACert, Cert: r.Cert, Key: r.Key}}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.Start(ctx)
	return e
}

// remoteSandbox is a sandbox on engine far, deleted with its volumes at
// the end of the test.
func newRemoteSandbox(t *testing.T, e *Engine, cfg SandboxConfig) *Sandbox {
	t.Helper()
	cfg.Engine = ptr("far")
	sb, err := e.Create(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Delete(context.Background(), sb.ID, true) })
	return sb
}

// sh runs script in sb and fails t unless it exited 0.
func remoteSh(t *testing.T, e *Engine, id, script string) string {
	t.Helper()
	res, err := e.Exec(context.Background(), id, RunRequest{Argv: []string{"/bin/sh", "-c", script}, TimeoutMs: 60000})
	if err != nil {
		t.Fatalf("run refused: %v", err)
	}
	if !res.Record.OK() {
		t.Fatalf("run %q: %+v\nstdout %s\nstderr %s", script, res.Record, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// A sandbox on the remote engine: the engine on the capability card, files
// written and read back through the file API, code run there, the same
// jail as a local workspace's, and host folders refused unless copied.
func TestRemoteEngineRunsFilesAndCode(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon; make test-go runs it")
	}
	t.Parallel()
	r := testutil.Remote(t)
	e := remoteEngine(t, r)
	ctx := context.Background()

	caps := e.Capabilities(ctx, true)
	var far *EngineInfo
	for i, en := range caps.Engines {
		if en.Name == "far" {
			far = &caps.Engines[i]
		}
	}
	if far == nil || far.State != backends.Healthy || !far.Remote || far.Version == "" || far.CPUs < 1 || far.MemoryBytes <= 0 {
		t.Fatalf("the capability card's engine: %+v (all: %+v)", far, caps.Engines)
	}

	sb := newRemoteSandbox(t, e, SandboxConfig{})
	if sb.Engine != "far" || sb.Backend != "docker" || sb.Workspace != "/work" {
		t.Fatalf("sandbox: engine %q backend %q workspace %q", sb.Engine, sb.Backend, sb.Workspace)
	}
	if _, err := e.WriteFile(sb.ID, "in/data.txt", []byte("from this machine\n")); err != nil {
		t.Fatal(err)
	}
	out := remoteSh(t, e, sb.ID, `cat in/data.txt; echo made there >out.txt; pwd`)
	if out != "from this machine\n/work\n" {
		t.Fatalf("the run saw %q", out)
	}
	if fc, err := e.ReadFile(sb.ID, "out.txt", 0, false); err != nil || fc.Content != "made there\n" {
		t.Fatalf("read back: %+v %v", fc, err)
	}
	list, err := e.Files(sb.ID, ".")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range list {
		names[f.Name] = true
	}
	if !names["in"] || !names["out.txt"] {
		t.Fatalf("listing: %+v", list)
	}

	// A code run: the image has sh only, so bash is a wrapper in the
	// workspace, found on the sandbox's PATH.
	remoteSh(t, e, sb.ID, `mkdir -p bin && printf '#!/bin/sh\nexec /bin/sh "$@"\n' >bin/bash && chmod +x bin/bash`)
	if _, err := e.Update(sb.ID, SandboxConfig{Env: map[string]string{"PATH": "/work/bin:/bin"}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(ctx, sb.ID, RunRequest{Language: "bash", Code: "echo $((6*7)) >answer.txt; cat in/data.txt"})
	if err != nil || !res.Record.OK() || res.Stdout != "from this machine\n" {
		t.Fatalf("code run: %v %+v %q %q", err, res.Record, res.Stdout, res.Stderr)
	}
	if res.Record.Engine != "far" || res.Record.Isolation != "docker" {
		t.Fatalf("the record: engine %q isolation %q", res.Record.Engine, res.Record.Isolation)
	}
	if fc, _ := e.ReadFile(sb.ID, "answer.txt", 0, false); fc == nil || fc.Content != "42\n" {
		t.Fatalf("the code run's file: %+v", fc)
	}

	// The quota: this daemon's volume driver takes no size, so the
	// watchdog counts through the container, and the record says so.
	if !slices.ContainsFunc(res.Record.Enforced, func(l string) bool { return strings.HasPrefix(l, "disk: watchdog over the Docker API") }) {
		t.Errorf("the record's disk line: %q", res.Record.Enforced)
	}
	// A traced run: the in-container hooks and the diff, no outside
	// tracer across the link.
	note, err := e.SetTrace(sb.ID, true)
	if err != nil || !strings.Contains(note, "no tracer runs there from outside") {
		t.Fatalf("trace on: %q %v", note, err)
	}
	traced, err := e.Exec(ctx, sb.ID, RunRequest{Command: "echo x >traced.txt"})
	if err != nil || !traced.Record.OK() {
		t.Fatalf("a traced run: %v %+v", err, traced.Record)
	}
	evs, err := e.Events(EventQuery{RunID: traced.Record.ID})
	if err != nil || !slices.ContainsFunc(evs.Events, func(ev StoredEvent) bool {
		return ev.Source == "diff" && strings.HasSuffix(ev.Target, "/traced.txt")
	}) || slices.ContainsFunc(evs.Events, func(ev StoredEvent) bool { return ev.Source == "strace" }) {
		t.Fatalf("the traced run's events: %+v %v", evs.Events, err)
	}
	_, _ = e.SetTrace(sb.ID, false)

	// The same jail as here: no link the sandbox planted is followed.
	remoteSh(t, e, sb.ID, `ln -s /etc pw && ln -s /etc/passwd pwfile`)
	for _, p := range []string{"pw/passwd", "pwfile"} {
		if _, err := e.ReadFile(sb.ID, p, 0, false); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("read %s through a planted link: %v", p, err)
		}
	}
	if _, err := e.WriteFile(sb.ID, "pw/x", []byte("x")); err == nil {
		t.Error("a write through a planted link succeeded")
	}
	if _, err := e.ReadFile(sb.ID, "../etc/passwd", 0, false); err == nil {
		t.Error("a path out of the workspace was read")
	}

	// A host folder is refused unless copied; a copy is there, read-only
	// when asked, and not a bind of this machine's folder.
	src := testDir(t)
	if err := os.WriteFile(filepath.Join(src, "note.txt"), []byte("copied once\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Symlink("/etc/passwd", filepath.Join(src, "link"))
	_ = os.Chmod(src, 0o755) // the sandbox reads the folder with its own rights
	_, err = e.Create(ctx, SandboxConfig{Engine: ptr("far"), Mounts: []backends.Mount{{Source: src, Target: "m", ReadOnly: true}}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "mounts[0].copy" || !strings.Contains(err.Error(), "cannot be bound on engine far") {
		t.Fatalf("a host folder mount on the remote engine: %v", err)
	}
	if _, err := e.Create(ctx, SandboxConfig{Engine: ptr("far"), ProjectDir: ptr(src)}); !errors.As(err, &fe) || fe.Field != "projectDir" {
		t.Fatalf("a project dir on the remote engine: %v", err)
	}
	// A one-shot there: a container of its own with a tmpfs workspace of
	// its quota, removed after.
	once, err := e.RunOnce(ctx, SandboxConfig{Engine: ptr("far")}, RunRequest{Command: "echo one-shot there; pwd; df -k . | tail -1"})
	if err != nil || !once.Record.OK() || !strings.HasPrefix(once.Stdout, "one-shot there\n/work\ntmpfs") || once.Record.Engine != "far" {
		t.Fatalf("a one-shot on the remote engine: %v %+v %q %q", err, once.Record, once.Stdout, once.Stderr)
	}

	// Images are never pulled there either.
	missing := newRemoteSandbox(t, e, SandboxConfig{Image: ptr("senclaw-test/not-there:1")})
	if _, err := e.Exec(ctx, missing.ID, RunRequest{Command: "true"}); err == nil || !strings.Contains(err.Error(), "is not on engine far, and SenClaw never pulls implicitly") {
		t.Fatalf("an image the engine lacks: %v", err)
	}
	cp := newRemoteSandbox(t, e, SandboxConfig{Mounts: []backends.Mount{{Source: src, Target: "m", ReadOnly: true, Copy: true}}})
	out = remoteSh(t, e, cp.ID, `cat m/note.txt; readlink m/link; echo x >m/new 2>/dev/null || echo read-only`)
	if out != "copied once\n/etc/passwd\nread-only\n" {
		t.Fatalf("the copied mount: %q", out)
	}
	if _, err := e.WriteFile(cp.ID, "m/new", []byte("x")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a write into the read-only copy: %v", err)
	}
}

// Network off reaches nothing; on, an allowed loopback server of this
// machine answers only through the engine's proxy, with a loopback rule,
// the engine's API never; a listen port answers at 127.0.0.1:P here.
func TestRemoteEngineNetworkGoesThroughThisMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon; make test-go runs it")
	}
	t.Parallel()
	r := testutil.Remote(t)
	e := remoteEngine(t, r)
	allowed := serveText(t, text("local-ok"))
	other := serveText(t, text("other-ok"))
	api := serveText(t, text("api-secret"))
	e.ProtectPort(api)

	off := newRemoteSandbox(t, e, SandboxConfig{})
	out := remoteSh(t, e, off.ID, fmt.Sprintf(`ls /sys/class/net; printf 'GET http://127.0.0.1:%d/ HTTP/1.0\r\n\r\n' | nc -w 3 127.0.0.1 3128 || echo no-proxy; nc -w 3 127.0.0.1 %d </dev/null || echo no-direct`, allowed, allowed))
	if out != "lo\nno-proxy\nno-direct\n" {
		t.Fatalf("network off: %q", out)
	}

	if _, err := e.Create(context.Background(), SandboxConfig{Engine: ptr("far"), Loopback: []int{api}}); err == nil {
		t.Fatal("a loopback rule for the engine's API was taken")
	}
	listen := testutil.FreePort(t)
	on := newRemoteSandbox(t, e, SandboxConfig{Network: ptr(true), Loopback: []int{allowed}, Listen: []int{listen}})
	viaProxy := func(port int) string {
		return fmt.Sprintf(`printf 'GET http://127.0.0.1:%d/x HTTP/1.0\r\n\r\n' | nc -w 10 127.0.0.1 3128; echo`, port)
	}
	out = remoteSh(t, e, on.ID, strings.Join([]string{
		viaProxy(allowed),
		fmt.Sprintf(`printf 'GET /y HTTP/1.0\r\n\r\n' | nc -w 10 127.0.0.1 %d; echo`, allowed), // the forwarder's loopback port
		viaProxy(other),
		viaProxy(api),
		"ls /sys/class/net",
	}, "\n"))
	if strings.Count(out, "local-ok") != 2 || !strings.Contains(out, "local-ok /x") || !strings.Contains(out, "local-ok /y") {
		t.Errorf("the allowed loopback server was not reached through the proxy:\n%s", out)
	}
	if strings.Contains(out, "other-ok") || strings.Contains(out, "api-secret") || strings.Count(out, "HTTP/1.1 403 Forbidden") != 2 {
		t.Errorf("a port of this machine without a rule, or the engine's API, was reached (want two 403s):\n%s", out)
	}
	if !strings.HasSuffix(out, "\nlo\n") {
		t.Errorf("the container has an interface besides lo:\n%s", out)
	}
	if n, hosts := e.NetworkDenials(on.ID); n < 2 {
		t.Errorf("denials counted: %d %v", n, hosts)
	}

	// A listen port of the remote sandbox, at 127.0.0.1:P on this machine.
	res, err := e.Exec(context.Background(), on.ID, RunRequest{Argv: []string{"/bin/sh", "-c", fmt.Sprintf(`mkdir -p www && echo served-there >www/index.html && exec httpd -f -p 127.0.0.1:%d -h www`, listen)}, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.KillRun(res.Record.ID) })
	var body string
	testutil.WaitFor(t, 30*time.Second, "the listen port at 127.0.0.1 here", func() bool {
		body = httpGet(fmt.Sprintf("http://127.0.0.1:%d/", listen))
		return strings.Contains(body, "served-there")
	})
	// Its log is kept here.
	if log, err := e.ReadRunLog(res.Record.ID, 0, 4096); err != nil || !log.Running {
		t.Fatalf("the background run's log: %+v %v", log, err)
	}
	// Its processes and use, through the Docker API over the link.
	st, err := e.Stats(context.Background(), on.ID)
	if err != nil || st.Source != "container" || st.Engine != "far" || !st.Running ||
		!slices.ContainsFunc(st.Processes, func(p ProcessInfo) bool { return strings.Contains(p.Command, "httpd") }) {
		t.Fatalf("stats: %+v %v", st, err)
	}
}

// The watchdog counts a workspace there through the container and
// kills the run past its quota.
func TestRemoteEngineQuotaHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon; make test-go runs it")
	}
	t.Parallel()
	e := remoteEngine(t, testutil.Remote(t))
	sb := newRemoteSandbox(t, e, SandboxConfig{DiskMB: ptr(16)})
	res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "for i in 1 2 3; do dd if=/dev/zero of=f$i bs=1M count=10 2>/dev/null; done; sleep 20", TimeoutMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Record.Killed, "disk quota: the workspace holds") {
		t.Fatalf("a run past its quota: killed %q, exit %v", res.Record.Killed, res.Record.ExitCode)
	}
}

// httpGet is the body of a GET of url, or "" (a short timeout).
func httpGet(url string) string {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The remote daemon killed mid-run: the run ends with a clear error, the
// sandbox shows unreachable (kept, not deleted) and runs there are
// refused with the reason; once the daemon is back, it is adopted again,
// its files where they were.
func TestRemoteEngineLostAndAdopted(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: starts, kills and restarts a Docker daemon; make test-go runs it")
	}
	t.Parallel()
	r := testutil.PrivateRemote(t)
	e := remoteEngine(t, r)
	sb := newRemoteSandbox(t, e, SandboxConfig{})
	if _, err := e.WriteFile(sb.ID, "kept.txt", []byte("still here\n")); err != nil {
		t.Fatal(err)
	}
	done := make(chan *RunResult, 1)
	go func() {
		res, _ := e.Exec(context.Background(), sb.ID, RunRequest{Command: "echo started; sleep 60", TimeoutMs: 120000})
		done <- res
	}()
	testutil.WaitFor(t, 30*time.Second, "the run to start", func() bool { return e.live.count(sb.ID) > 0 })
	time.Sleep(500 * time.Millisecond)
	r.Kill(t)
	var res *RunResult
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end when its engine went")
	}
	if res.Record.ExitCode != nil || !strings.Contains(res.Record.Error, "engine far") || !strings.Contains(res.Record.Error, "not answering") {
		t.Fatalf("the run's record: exit %v, error %q", res.Record.ExitCode, res.Record.Error)
	}
	testutil.WaitFor(t, 20*time.Second, "the sandbox to show unreachable", func() bool {
		got, err := e.Get(sb.ID)
		return err == nil && got.State == StateUnreachable
	})
	refusedRun, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "true"})
	if err == nil || !IsRefused(err) || !strings.Contains(err.Error(), "engine far, which is unreachable") {
		t.Fatalf("a run on the unreachable engine: %v", err)
	}
	if !strings.HasPrefix(refusedRun.Record.Isolation, "refused: ") {
		t.Fatalf("its record: %q", refusedRun.Record.Isolation)
	}
	var ue *UnreachableError
	if _, err := e.ReadFile(sb.ID, "kept.txt", 0, false); !errors.As(err, &ue) {
		t.Fatalf("a read on the unreachable engine: %v", err)
	}

	r.Restart(t)
	testutil.WaitFor(t, 60*time.Second, "the sandbox to be adopted again", func() bool {
		got, err := e.Get(sb.ID)
		return err == nil && got.State != StateUnreachable
	})
	if fc, err := e.ReadFile(sb.ID, "kept.txt", 0, false); err != nil || fc.Content != "still here\n" {
		t.Fatalf("after the engine came back: %+v %v", fc, err)
	}
	if out := remoteSh(t, e, sb.ID, "cat kept.txt"); out != "still here\n" {
		t.Fatalf("a run after the engine came back: %q", out)
	}
}

// Reconcile removes a remote container whose sandbox is gone (the engine
// stopped, and the sandbox went from its store meanwhile), and adopts
// those whose sandbox is there.
func TestRemoteEngineReconcileRemovesGoneSandboxes(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon; make test-go runs it")
	}
	t.Parallel()
	r := testutil.Remote(t)
	data := filepath.Join(testDir(t), "data")
	inData := func(o *Options) { o.DataDir = data }
	e := remoteEngine(t, r, inData)
	gone := newRemoteSandbox(t, e, SandboxConfig{})
	kept := newRemoteSandbox(t, e, SandboxConfig{})
	remoteSh(t, e, gone.ID, "true")
	remoteSh(t, e, kept.ID, "echo kept >k")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := newTestEngine(t, nil, inData)
	if err := e2.store.DeleteSandbox(gone.ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e2.Start(ctx)
	far := e2.namedEngine("far")
	if far == nil {
		t.Fatal("the engine's settings did not keep engine far")
	}
	status := func(sb *Sandbox) string {
		spec, err := e2.specFor(context.Background(), sb)
		if err != nil {
			return "error: " + err.Error()
		}
		st, err := far.b.SandboxStatus(context.Background(), spec)
		if err != nil {
			return "error: " + err.Error()
		}
		return st
	}
	testutil.WaitFor(t, 30*time.Second, "the gone sandbox's container to be removed", func() bool { return status(gone) == backends.StatusNone })
	if st := status(kept); st == backends.StatusNone || strings.HasPrefix(st, "error") {
		t.Fatalf("the kept sandbox's container: %s", st)
	}
	if out := remoteSh(t, e2, kept.ID, "cat k"); out != "kept\n" {
		t.Fatalf("the kept sandbox: %q", out)
	}
	_ = far.b.Purge(context.Background(), gone.ID)
	_, _ = e2.Delete(context.Background(), kept.ID, true)
}

// An engine that answers again after a silence is reconciled: its
// containers with runs of this engine still going are kept as they are
// (only a previous engine's leftovers are ended).
func TestRemoteEngineReadoptionKeepsLiveRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon; make test-go runs it")
	}
	t.Parallel()
	e := remoteEngine(t, testutil.Remote(t))
	sb := newRemoteSandbox(t, e, SandboxConfig{})
	res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "echo going; sleep 60", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.KillRun(res.Record.ID) })
	testutil.WaitFor(t, 20*time.Second, "the background run to start", func() bool {
		log, err := e.ReadRunLog(res.Record.ID, 0, 100)
		return err == nil && strings.Contains(log.Data, "going")
	})
	if err := e.ReconcileEngine(context.Background(), "far"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if run, err := e.Run(res.Record.ID); err != nil || run.State != "running" {
		t.Fatalf("the background run after a reconcile: %+v %v", run, err)
	}
}
