package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/backends/netfwd/remotefs"
	"github.com/senclaw/sandbox/internal/testutil"
)

// newRemoteBackend is a backend of the second daemon (a Docker engine
// standing in for one on another machine, testutil.Remote) as a named
// engine, closed at the end of the test.
func newRemoteBackend(t testing.TB) (*Backend, testutil.RemoteDocker) {
	t.Helper()
	r := testutil.Remote(t)
	b := New(Options{
		DefaultImage: testImage,
		Owner:        "test-" + randomHex(4),
		Remote:       &Remote{Name: "far", Host: r.Host, CACert: r.CACert, Cert: r.Cert, Key: r.Key},
		Forwarder:    netfwdtest.Path(t),
		PoolSize:     -1,
		Logger:       slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	t.Cleanup(func() { _ = b.Close() })
	if c := b.Probe(context.Background()); !c.Usable() {
		t.Fatalf("the second daemon: %s", c.Reason)
	}
	return b, r
}

// newRemoteSpec is a persistent sandbox's spec on b, whose container and
// volumes go at the end of the test.
func newRemoteSpec(t testing.TB, b *Backend, argv ...string) *backends.Spec {
	t.Helper()
	id := "t" + randomHex(4)
	t.Cleanup(func() {
		_ = b.RemoveSandbox(context.Background(), id)
		_ = b.Purge(context.Background(), id)
	})
	return &backends.Spec{
		SandboxID: id, RunID: "r" + randomHex(3), Workspace: workDir, Argv: argv,
		Env:    []string{"PATH=/bin:/usr/bin", "HOME=/work"},
		FsMode: backends.FsStrict,
		Limits: backends.Limits{CPUs: 1, MemoryMB: 256, Pids: 128, DiskMB: 50},
		User:   &backends.Credential{UID: nobody, GID: nobody},
	}
}

// A container of an engine elsewhere binds nothing of this machine: its
// workspace is a volume the sandbox user owns, /run a volume of its own
// with the forwarder copied in; a run writes there and reads it back.
func TestRemoteWorkspaceIsAVolume(t *testing.T) {
	t.Parallel()
	b, _ := newRemoteBackend(t)
	spec := newRemoteSpec(t, b)
	res := run(t, b, spec, "/bin/sh", "-c", `echo hi >/work/f && cat /work/f && stat -c '%u %a' /work && ls /run`)
	if res.status.Code != 0 || !strings.HasPrefix(res.stdout, "hi\n65534 700\n") || !strings.Contains(res.stdout, "senclaw-netfwd") {
		t.Fatalf("run: %+v %q %q", res.status, res.stdout, res.stderr)
	}
	ins, err := res.proc.cli.ContainerInspect(context.Background(), res.proc.ref.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ins.Container.Mounts {
		if m.Type == "bind" && m.Source != "/dev/null" {
			t.Errorf("a container elsewhere binds %s at %s", m.Source, m.Destination)
		}
	}
	again := run(t, b, spec, "cat", "/work/f")
	if again.stdout != "hi\n" {
		t.Fatalf("the next run reads %q", again.stdout)
	}
}

// The file API elsewhere goes through the forwarder as the sandbox user
// and follows no link the sandbox planted.
func TestRemoteFilesAreJailed(t *testing.T) {
	t.Parallel()
	b, _ := newRemoteBackend(t)
	spec := newRemoteSpec(t, b)
	ctx := context.Background()
	fs, done, err := b.Files(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, err := fs.Write(ctx, "in/a.txt", strings.NewReader("from the engine")); err != nil {
		t.Fatal(err)
	}
	res := run(t, b, spec, "/bin/sh", "-c", `cat /work/in/a.txt; stat -c %u /work/in/a.txt; ln -s /etc /work/etc; echo out >/work/out.txt`)
	if res.stdout != "from the engine65534\n" {
		t.Fatalf("the run saw %q (%s)", res.stdout, res.stderr)
	}
	if got, err := fs.Read(ctx, "out.txt", 100); err != nil || string(got) != "out\n" {
		t.Fatalf("read back: %q %v", got, err)
	}
	if _, err := fs.Read(ctx, "etc/passwd", 1000); !errors.Is(err, remotefs.ErrLink) {
		t.Fatalf("a read through a planted link: %v", err)
	}
	entries, err := fs.List(ctx, ".")
	if err != nil || len(entries) < 3 {
		t.Fatalf("list: %+v %v", entries, err)
	}
}

// A host folder mount is refused on an engine elsewhere unless a copy is
// asked for; a copy made once is there, read-only when the mount is.
func TestRemoteMountsAreCopiesOrRefused(t *testing.T) {
	t.Parallel()
	b, _ := newRemoteBackend(t)
	spec := newRemoteSpec(t, b, "true")
	spec.Mounts = []backends.Mount{{Source: "/tmp/some/folder", Target: "data", ReadOnly: true}}
	if _, err := b.Start(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "cannot be bound on engine far") {
		t.Fatalf("a bind mount elsewhere: %v", err)
	}
	spec.Mounts[0].Copy = true
	err := b.FillMount(context.Background(), spec, spec.Mounts[0], func(tw *tar.Writer, prefix string, uid, gid int) error {
		body := "copied once"
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: prefix + "note.txt", Mode: 0o644, Size: int64(len(body)), Uid: uid, Gid: gid}); err != nil {
			return err
		}
		_, err := io.WriteString(tw, body)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, b, spec, "/bin/sh", "-c", `cat /work/data/note.txt; echo x >/work/data/new 2>/dev/null && echo wrote`)
	if res.stdout != "copied once" {
		t.Fatalf("the run saw %q (%s)", res.stdout, res.stderr)
	}
}

// A run's network elsewhere goes over the relay to the engine's side: a
// proxy connection comes to Serve, and the engine reaches the run's
// listen port.
func TestRemoteRelayCarriesProxyAndListen(t *testing.T) {
	t.Parallel()
	b, _ := newRemoteBackend(t)
	spec := newRemoteSpec(t, b)
	spec.Ports.Listen = []int{8080}
	served := make(chan string, 4)
	spec.Net = &backends.NetPlumbing{Forwarder: netfwdtest.Path(t), Listen: []int{8080}, Serve: func(c net.Conn) {
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		served <- req.URL.String()
		io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nvia engine")
	}}
	spec.Env = append(spec.Env, "http_proxy=http://127.0.0.1:3128")
	var out testutil.SyncBuffer
	s := *spec
	s.Argv = []string{"/bin/sh", "-c", `wget -q -O - http://example.test/x; echo; echo listening | nc -l -p 8080; sleep 1`}
	s.Stdout, s.Stderr = &out, &out
	p, err := b.Start(context.Background(), &s)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "the proxy request", func() bool { return strings.Contains(out.String(), "via engine") })
	if u := <-served; u != "http://example.test/x" {
		t.Fatalf("the engine's side got %q", u)
	}
	var got string
	testutil.WaitFor(t, 20*time.Second, "the listen port", func() bool {
		c, err := b.DialListen(context.Background(), spec.SandboxID, 8080)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		data, _ := io.ReadAll(c)
		got = string(data)
		return got != ""
	})
	if got != "listening\n" {
		t.Fatalf("the listen port said %q", got)
	}
	if st, err := p.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("%+v %v: %s", st, err, out.String())
	}
}

// A run with network elsewhere finds the engine's CA bundle in its
// plumbing folder, written as the sandbox user; a run that joins a going
// relay with the same bundle rewrites nothing a going run reads (here
// the sandbox's own change stays), one with another bundle writes it,
// and a link the sandbox planted there is replaced, never followed.
func TestRemoteRunsGetTheCABundle(t *testing.T) {
	t.Parallel()
	b, _ := newRemoteBackend(t)
	spec := newRemoteSpec(t, b)
	withBundle := func(bundle string) *backends.Spec {
		s := *spec
		s.Net = &backends.NetPlumbing{Forwarder: netfwdtest.Path(t), Serve: func(c net.Conn) { c.Close() }, CABundle: []byte(bundle)}
		return &s
	}
	const file = "/run/senclaw/ca-bundle.pem"
	// A run that goes on while the others come.
	going := *withBundle("bundle-1\n")
	going.Argv = []string{"/bin/sh", "-c", "stat -c '%u %a' " + file + "; cat " + file + "; echo changed >" + file + "; touch /work/started; while [ ! -e /work/go ]; do sleep 0.1; done"}
	var out testutil.SyncBuffer
	going.Stdout, going.Stderr = &out, &out
	p, err := b.Start(context.Background(), &going)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "the first run to start", func() bool { return strings.Contains(out.String(), "bundle-1") })
	if !strings.HasPrefix(out.String(), "65534 644\nbundle-1\n") {
		t.Fatalf("the first run's bundle: %q", out.String())
	}
	if res := run(t, b, spec, "/bin/sh", "-c", "while [ ! -e /work/started ]; do sleep 0.1; done"); res.status.Code != 0 {
		t.Fatalf("waiting for the first run: %+v %q", res.status, res.stderr)
	}
	if res := run(t, b, withBundle("bundle-1\n"), "cat", file); res.stdout != "changed\n" {
		t.Errorf("a run with the same bundle rewrote it under the going one: %q %q", res.stdout, res.stderr)
	}
	if res := run(t, b, withBundle("bundle-2\n"), "cat", file); res.stdout != "bundle-2\n" {
		t.Errorf("a run with another bundle reads %q %q", res.stdout, res.stderr)
	}
	run(t, b, spec, "touch", "/work/go")
	if st, err := p.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("the first run: %+v %v: %s", st, err, out.String())
	}
	// With no relay going, the sandbox plants a link in its folder.
	if res := run(t, b, spec, "/bin/sh", "-c", "echo kept >/work/target; rm -f "+file+"; ln -s /work/target "+file); res.status.Code != 0 {
		t.Fatalf("planting the link: %+v %q", res.status, res.stderr)
	}
	res := run(t, b, withBundle("bundle-1\n"), "/bin/sh", "-c", "[ -L "+file+" ] && echo link; cat "+file+" /work/target")
	if res.stdout != "bundle-1\nkept\n" {
		t.Fatalf("after a planted link the run reads %q %q", res.stdout, res.stderr)
	}
}

// A run elsewhere ends with its whole tree, and a one-shot run there
// gets the files the engine gives it on a tmpfs workspace.
func TestRemoteRunEndsItsTreeAndOneShotsTakeFiles(t *testing.T) {
	t.Parallel()
	b, _ := newRemoteBackend(t)
	spec := newRemoteSpec(t, b)
	run(t, b, spec, "/bin/sh", "-c", `setsid sleep 300 & (sleep 301 &) ; exit 0`)
	procs, err := b.ContainerTop(context.Background(), spec.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if strings.Contains(p.Command, "sleep 30") {
			t.Errorf("left behind: %+v", p)
		}
	}
	one := newRemoteSpec(t, b)
	one.OneShot = true
	one.Files = []backends.File{{Path: ".runs/code.sh", Data: []byte("echo from the file; df -k /work | tail -1")}}
	res := run(t, b, one, "/bin/sh", "/work/.runs/code.sh")
	if !strings.HasPrefix(res.stdout, "from the file\ntmpfs") {
		t.Fatalf("one-shot: %q %q", res.stdout, res.stderr)
	}
}
