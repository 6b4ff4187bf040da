package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/internal/testutil"
)

// hardEngine is an engine that makes hard disk quotas, as main builds it
// (as root, with loop devices); without root it skips, and under CI a
// root that cannot make them fails.
func hardEngine(t *testing.T, opts ...engineOpt) *Engine {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("hard disk quotas need a root engine")
	}
	opts = append(opts, func(o *Options) { o.Disks = diskquota.NewImages(filepath.Join(o.DataDir, "disks"), nil) })
	e := bwrapEngine(t, opts...)
	if ok, why := e.opts.Disks.Usable(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a root engine must make hard disk quotas under CI: %s", why)
		}
		t.Skip(why)
	}
	return e
}

// quotaCases are the ways a run tries to take more disk than its 16 MB:
// 150,000 empty files (6 MB of bytes, but 150,000 inodes), a burst of
// three times the quota in one go (three writers, each up to the
// per-file limit), and a file held open after its unlinking.
var quotaCases = []struct {
	name   string
	script string
	// hard is what a hard quota answers (the kernel refuses; the run
	// goes on); the watchdog kills the run instead.
	hard string
}{
	{"files", `i=0; while [ $i -lt 150000 ]; do true 2>/dev/null > f$i || break; i=$((i+1)); done; echo "made $i"; sleep 5`, "made "},
	{"burst", `for i in 1 2 3; do dd if=/dev/zero of=big$i bs=16M count=1 2>&1 & done; wait; sleep 5`, "No space left on device"},
	{"unlinked", `exec 3>held; rm held; dd if=/dev/zero bs=1M count=10 >&3 2>/dev/null; dd if=/dev/zero of=more bs=1M count=10 2>&1; sleep 5`, "No space left on device"},
}

// TestTheDiskQuotaHolds: every way past a 16 MB quota fails, for each
// kind of quota: a lasting sandbox's ext4 image and a one-shot's tmpfs
// (the kernel answers ENOSPC: nothing overshoots, the run goes on) and
// the watchdog (which has the run killed); the record says which held.
func TestTheDiskQuotaHolds(t *testing.T) {
	t.Parallel()
	hard := hardEngine(t)
	soft := bwrapEngine(t)
	for _, kind := range []string{"image", "tmpfs", "watchdog"} {
		for _, tc := range quotaCases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				cfg := SandboxConfig{DiskMB: ptr(16), TimeoutMs: ptr(120000)}
				req := RunRequest{Command: tc.script}
				var res *RunResult
				var err error
				switch kind {
				case "image", "watchdog":
					e := hard
					if kind == "watchdog" {
						e = soft
					}
					sb, cerr := e.Create(context.Background(), cfg)
					if cerr != nil {
						t.Fatal(cerr)
					}
					t.Cleanup(func() { _, _ = e.Delete(context.Background(), sb.ID, true) })
					res, err = e.Exec(context.Background(), sb.ID, req)
				case "tmpfs":
					res, err = hard.RunOnce(context.Background(), cfg, req)
				}
				if err != nil {
					t.Fatal(err)
				}
				r := res.Record
				line := strings.Join(r.Enforced, "; ")
				if kind == "watchdog" {
					if !strings.Contains(r.Killed, "disk quota") || !strings.Contains(line, "disk: watchdog") {
						t.Fatalf("the watchdog did not stop the run: killed %q, %s\n%s", r.Killed, line, res.Stdout)
					}
					return
				}
				want := map[string]string{"image": "disk: loop ext4 image (hard), 16 MB and 1024 files", "tmpfs": "disk: tmpfs (hard), 16 MB and 1024 files"}[kind]
				if !strings.Contains(line, want) || r.Killed != "" || r.TimedOut {
					t.Fatalf("record: killed %q, timed out %v, %s; want %q", r.Killed, r.TimedOut, line, want)
				}
				if !strings.Contains(res.Stdout, tc.hard) {
					t.Fatalf("the kernel did not refuse: %q", res.Stdout)
				}
				if tc.name == "files" {
					var n int
					fmt.Sscanf(res.Stdout[strings.Index(res.Stdout, "made "):], "made %d", &n)
					if n >= int(diskquota.Inodes(16)) {
						t.Fatalf("%d files fit a 16 MB quota (%d inodes)", n, diskquota.Inodes(16))
					}
				}
			})
		}
	}
}

// TestAWorkspaceImageLastsWithItsSandbox: files the file API wrote before
// the first run move into the image that run makes; the engine's stop
// unmounts it and the next engine mounts it again; deleting the sandbox
// but keeping its files leaves them in a plain directory, and a purge
// leaves nothing.
func TestAWorkspaceImageLastsWithItsSandbox(t *testing.T) {
	t.Parallel()
	root := testDir(t)
	opts := func(o *Options) { o.DataDir = filepath.Join(root, "data") }
	e := hardEngine(t, opts)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{DiskMB: ptr(32)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteFile(sb.ID, "early.txt", []byte("before the first run\n")); err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "cat early.txt; echo later > later.txt"})
	if err != nil || !res.Record.OK() || res.Stdout != "before the first run\n" {
		t.Fatalf("first run: %v %+v %q", err, res.Record, res.Stdout)
	}
	if !diskquota.Mounted(sb.Workspace) {
		t.Fatal("the first run left no image mounted over the workspace")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if diskquota.Mounted(sb.Workspace) {
		t.Fatal("the engine's stop left the image mounted")
	}

	e2 := hardEngine(t, opts)
	if !diskquota.Mounted(sb.Workspace) {
		t.Fatal("the next engine did not mount the image again")
	}
	res, err = e2.Exec(ctx, sb.ID, RunRequest{Command: "cat early.txt later.txt"})
	if err != nil || res.Stdout != "before the first run\nlater\n" {
		t.Fatalf("after the restart: %v %q %s", err, res.Stdout, res.Stderr)
	}
	if _, err := e2.Delete(ctx, sb.ID, false); err != nil {
		t.Fatal(err)
	}
	if diskquota.Mounted(sb.Workspace) {
		t.Fatal("the deleted sandbox's image is still mounted")
	}
	if data, err := os.ReadFile(filepath.Join(sb.Workspace, "later.txt")); err != nil || string(data) != "later\n" {
		t.Fatalf("the kept files: %q %v", data, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "data", "disks")); len(entries) != 0 {
		t.Fatalf("images left after the delete: %v", entries)
	}

	sb2, err := e2.Create(ctx, SandboxConfig{DiskMB: ptr(16)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2.Exec(ctx, sb2.ID, RunRequest{Command: "echo x > f"}); err != nil {
		t.Fatal(err)
	}
	if purged, err := e2.Delete(ctx, sb2.ID, true); err != nil || !purged {
		t.Fatalf("purge: %v %v", purged, err)
	}
	if _, err := os.Stat(sb2.Workspace); !os.IsNotExist(err) {
		t.Fatalf("the purged workspace: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "data", "disks")); len(entries) != 0 {
		t.Fatalf("images left after the purge: %v", entries)
	}
}

// TestTheDiskQuotaHoldsInDocker: a Docker sandbox's workspace is bound
// into its container, so its image holds there too, made before the
// container; a Docker one-shot takes a pooled container whose workspace
// is a tmpfs of the quota, bound over the run's.
func TestTheDiskQuotaHoldsInDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: Docker containers with quota images (about 20 s); make test-go runs it")
	}
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("hard disk quotas need a root engine")
	}
	e, owner := dockerEngine(t, func(o *docker.Options) { o.HardQuota = true }, func(o *Options) {
		o.Disks = diskquota.NewImages(filepath.Join(o.DataDir, "disks"), nil)
	})
	ctx := context.Background()
	burst := quotaCases[1].script
	sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("docker"), DiskMB: ptr(16), TimeoutMs: ptr(60000)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Delete(context.Background(), sb.ID, true) })
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: burst})
	if err != nil {
		t.Fatal(err)
	}
	if line := strings.Join(res.Record.Enforced, "; "); !strings.Contains(line, "disk: loop ext4 image (hard), 16 MB") || !strings.Contains(res.Stdout, "No space left on device") {
		t.Fatalf("a Docker sandbox: %s\n%s", line, res.Stdout)
	}

	var pooled []string
	for i := 0; i < 2; i++ { // the first fills the pool, the second takes from it
		cfg := SandboxConfig{Backend: ptr("docker"), DiskMB: ptr(16), TimeoutMs: ptr(60000)}
		res, err := e.RunOnce(ctx, cfg, RunRequest{Command: burst})
		if i == 1 {
			waitSettled(t, owner, "a pooled one-shot")
			now := strings.Join(containersOf(t, owner, "pool"), " ")
			if strings.Contains(now, pooled[0]) && strings.Contains(now, pooled[1]) {
				t.Errorf("the one-shot took no pooled container")
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if line := strings.Join(res.Record.Enforced, "; "); !strings.Contains(line, "disk: tmpfs (hard), 16 MB") || !strings.Contains(res.Stdout, "No space left on device") {
			t.Fatalf("a Docker one-shot (%d): %s\n%s", i, line, res.Stdout)
		}
		if i == 0 {
			waitPooled(t, owner)
			pooled = containersOf(t, owner, "pool")
		}
	}
	waitSettled(t, owner, "the one-shots")
}

// waitPooled waits until owner's pool holds two containers.
func waitPooled(t *testing.T, owner string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); len(containersOf(t, owner, "pool")) < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pool did not fill")
		}
	}
}

// TestADockerSandboxSeesItsNewImage: a Docker sandbox whose container was
// made before its workspace had an image (an engine without hard quotas
// made it) gets a new container when the image comes, never one that
// still binds the directory the files moved out of.
func TestADockerSandboxSeesItsNewImage(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("hard disk quotas need a root engine")
	}
	root := testDir(t)
	owner := "senclaw-test-" + randomHex(4)
	t.Cleanup(func() {
		if ids := containersOf(t, owner, ""); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	engine := func(hard bool) *Engine {
		b := docker.New(docker.Options{DefaultImage: dockerTestImage, Owner: owner, PoolSize: -1})
		if c := b.Probe(context.Background()); !c.Usable() {
			if os.Getenv("CI") == "true" {
				t.Fatalf("docker is required under CI: %s", c.Reason)
			}
			t.Skipf("docker: %s", c.Reason)
		}
		e := newTestEngine(t, []backends.Backend{b}, func(o *Options) {
			o.DataDir = filepath.Join(root, "data")
			if hard {
				o.Disks = diskquota.NewImages(filepath.Join(o.DataDir, "disks"), nil)
			}
		})
		s := e.Settings()
		s.DefaultImage = dockerTestImage
		if _, err := e.SetSettings(s); err != nil {
			t.Fatal(err)
		}
		return e
	}
	ctx := context.Background()
	plain := engine(false)
	sb, err := plain.Create(ctx, SandboxConfig{Backend: ptr("docker"), DiskMB: ptr(32)})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := plain.Exec(ctx, sb.ID, RunRequest{Command: "echo one > f"}); err != nil || !res.Record.OK() {
		t.Fatalf("first run: %v %+v", err, res.Record)
	}
	plain.Close()

	hard := engine(true)
	res, err := hard.Exec(ctx, sb.ID, RunRequest{Command: "cat f; df -k /work | tail -1"})
	if err != nil || !res.Record.OK() || !strings.HasPrefix(res.Stdout, "one\n") {
		t.Fatalf("after the image came: %v %q %q %s", err, res.Stdout, res.Stderr, res.Record.Error)
	}
	if line := strings.Join(res.Record.Enforced, "; "); !strings.Contains(line, "loop ext4 image (hard)") {
		t.Fatalf("record: %s", line)
	}
	t.Cleanup(func() { _, _ = hard.Delete(context.Background(), sb.ID, true) })
}

// TestOneShotTmpfsAreBounded: at most 32 one-shot workspaces are a tmpfs
// at once (each mount slows every new sandbox's start); the others are
// counted by the watchdog and their records say why; the slots come back
// when the runs end.
func TestOneShotTmpfsAreBounded(t *testing.T) {
	t.Parallel()
	e := hardEngine(t)
	ctx := context.Background()
	var lines []string
	for i := 0; i < maxTmpfsOneShots+4; i++ {
		res, err := e.RunOnce(ctx, SandboxConfig{DiskMB: ptr(16)}, RunRequest{Command: "exec sleep 300", Background: true})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Join(res.Record.Enforced, "; "))
	}
	hard, soft := 0, 0
	for _, l := range lines {
		switch {
		case strings.Contains(l, "disk: tmpfs (hard)"):
			hard++
		case strings.Contains(l, "disk: watchdog") && strings.Contains(l, "the most at once"):
			soft++
		}
	}
	if hard != maxTmpfsOneShots || soft != 4 {
		t.Fatalf("%d tmpfs and %d watchdog one-shots, want %d and 4", hard, soft, maxTmpfsOneShots)
	}
	e.StopAll(ctx)
	testutil.WaitFor(t, 10*time.Second, "no tmpfs one-shot left", func() bool { return e.tmpfsOneShots.Load() == 0 })
	res, err := e.RunOnce(ctx, SandboxConfig{DiskMB: ptr(16)}, RunRequest{Command: "true"})
	if err != nil || !strings.Contains(strings.Join(res.Record.Enforced, "; "), "disk: tmpfs (hard)") {
		t.Fatalf("after the runs ended: %v %v", err, res.Record.Enforced)
	}
}
