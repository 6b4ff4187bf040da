package docker

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestDrift_needsRecreate_thenRecreateKeepsFiles changes a used sandbox's
// settings: the status says "needs recreate", a run is refused with how to
// fix it, Recreate keeps the files, and after 5 idle minutes a run
// recreates the container by itself.
func TestDrift_needsRecreate_thenRecreateKeepsFiles(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	clk := &clock{t: time.Now()}
	b := newTestBackend(t, func(o *Options) { o.Now = clk.Now })
	ctx := context.Background()
	spec := newSpec(t, b, "true")
	if st, err := b.SandboxStatus(ctx, spec); err != nil || st != backends.StatusNone {
		t.Fatalf("status before the first run: %q, %v", st, err)
	}
	run(t, b, spec, "/bin/sh", "-c", "echo kept > /work/file")
	if st, _ := b.SandboxStatus(ctx, spec); st != backends.StatusRunning {
		t.Fatalf("status after a run: %q", st)
	}
	firstID := containerID(t, spec.SandboxID)

	spec.Limits.MemoryMB = 300
	if st, _ := b.SandboxStatus(ctx, spec); st != backends.StatusNeedsRecreate {
		t.Fatalf("status after a settings change: %q, want %q", st, backends.StatusNeedsRecreate)
	}
	_, err := b.Start(ctx, spec)
	var nr *NeedsRecreateError
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), "recreate") {
		t.Fatalf("start of a drifted, recently used sandbox: %v", err)
	}
	if err := b.Recreate(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.SandboxStatus(ctx, spec); st != backends.StatusRunning {
		t.Fatalf("status after recreate: %q", st)
	}
	if r := run(t, b, spec, "cat", "/work/file"); r.stdout != "kept\n" {
		t.Fatalf("after recreate the file reads %q (stderr %q)", r.stdout, r.stderr)
	}
	secondID := containerID(t, spec.SandboxID)
	if secondID == firstID {
		t.Fatal("recreate kept the same container")
	}

	spec.Limits.Pids = 100
	clk.Add(recreateIdle + time.Minute)
	if r := run(t, b, spec, "cat", "/sys/fs/cgroup/pids/pids.max"); strings.TrimSpace(r.stdout) != "100" {
		t.Fatalf("auto-recreated container has pids.max %q", r.stdout)
	}
	if containerID(t, spec.SandboxID) == secondID {
		t.Fatal("an idle drifted sandbox was not recreated before the run")
	}
}

func containerID(t *testing.T, sandboxID string) string {
	t.Helper()
	res, err := testClient(t).ContainerInspect(context.Background(), containerName(sandboxID), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Container.ID
}

func exists(t *testing.T, sandboxID string) bool {
	t.Helper()
	_, err := inspectName(t, containerName(sandboxID))
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestReconcile_afterRestart: a new Backend (the engine restarted) whose
// known() lacks one sandbox removes that container and adopts the other.
func TestReconcile_afterRestart(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	first := newTestBackend(t, nil)
	keep, drop := newSpec(t, first, "true"), newSpec(t, first, "true")
	run(t, first, keep)
	run(t, first, drop)

	second := newTestBackend(t, func(o *Options) { o.Owner = first.opts.Owner })
	known := func(id string) bool { return id == keep.SandboxID }
	if err := second.Reconcile(context.Background(), known); err != nil {
		t.Fatal(err)
	}
	if !exists(t, keep.SandboxID) {
		t.Error("the known sandbox's container was removed")
	}
	if exists(t, drop.SandboxID) {
		t.Error("the unknown sandbox's container was kept")
	}
	if r := run(t, second, keep, "echo", "adopted"); r.stdout != "adopted\n" {
		t.Errorf("the adopted sandbox runs: %q %q", r.stdout, r.stderr)
	}
}

// TestPrune_injectedClock stops a container idle past IdleHours and removes
// it past MaxAgeDays.
func TestPrune_injectedClock(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	clk := &clock{t: time.Now()}
	b := newTestBackend(t, func(o *Options) { o.Now = clk.Now; o.IdleHours = 2; o.MaxAgeDays = 3 })
	ctx := context.Background()
	spec := newSpec(t, b, "true")
	run(t, b, spec)

	if err := b.Prune(ctx, clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.SandboxStatus(ctx, spec); st != backends.StatusRunning {
		t.Fatalf("after 1 idle hour: %q", st)
	}
	if err := b.Prune(ctx, clk.Now().Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.SandboxStatus(ctx, spec); st != backends.StatusStopped {
		t.Fatalf("after 3 idle hours: %q, want stopped", st)
	}
	if r := run(t, b, spec, "echo", "restarted"); r.stdout != "restarted\n" {
		t.Fatalf("a stopped sandbox runs again: %q", r.stdout)
	}

	// The loop prunes at once, with the injected clock.
	clk.Add(4 * 24 * time.Hour)
	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { b.RunPruner(loopCtx); close(done) }()
	testutil.WaitFor(t, 10*time.Second, "the sandbox to have no container", func() bool { st, _ := b.SandboxStatus(ctx, spec); return st == backends.StatusNone })
	cancel()
	<-done
	if r := run(t, b, spec, "echo", "back"); r.stdout != "back\n" {
		t.Fatalf("a pruned sandbox runs again: %q", r.stdout)
	}
}

// TestProbe_healthy asks the real daemon.
func TestProbe_healthy(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	c := newTestBackend(t, nil).Probe(context.Background())
	if c.State != backends.Healthy || c.Version == "" || !c.Isolates || c.Details["daemon"] != "answering" || len(c.Enforces) == 0 {
		t.Fatalf("probe: %+v", c)
	}
}

// TestProbe_refusesAnOldAPI: a daemon spoken to in an API older than
// MinAPIVersion (here pinned by DOCKER_API_VERSION) would ignore parts of
// the sandbox without a word: the probe finds it unfit and says why.
func TestProbe_refusesAnOldAPI(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, func(o *Options) {
		o.Getenv = func(k string) string {
			if k == "DOCKER_API_VERSION" {
				return "1.40"
			}
			return ""
		}
	})
	c := b.Probe(context.Background())
	if c.State == backends.Healthy || !strings.Contains(c.Reason, "API 1.40, older than the 1.41") {
		t.Fatalf("probe of a daemon spoken to in API 1.40: %+v", c)
	}
}

// TestClose_removesPool: the engine's stop leaves no pool container.
func TestClose_removesPool(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "true")
	spec.OneShot = true
	if err := b.Warm(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	cli, _ := b.client()
	if list, _ := b.listOurs(context.Background(), cli); len(list) != 2 {
		t.Fatalf("want 2 pooled containers, have %d", len(list))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	list, err := newTestBackend(t, func(o *Options) { o.Owner = b.opts.Owner }).listOurs(context.Background(), testClient(t))
	if err != nil || len(list) != 0 {
		t.Fatalf("after Close: %d containers, %v", len(list), err)
	}
	if entries, _ := os.ReadDir(b.opts.PoolDir); len(entries) != 0 {
		t.Fatalf("after Close the pool dir holds %d entries", len(entries))
	}
}
