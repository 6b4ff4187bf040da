package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
)

// pool keeps started, idle containers per one-shot configuration so that a
// one-shot run is one exec, not a container creation.
//
// A container needs its /work bound when it is created, before the engine
// makes the run's workspace. So a pooled container binds a fresh directory
// of its own under Options.PoolDir, and when a run takes it, the backend
// moves the files the engine put in the run's workspace into that
// directory and renames the directory onto the workspace path (rename(2)
// replaces an empty directory atomically). A bind mount follows the
// directory, not its name: the container now writes the engine's
// workspace, and the engine's quota watch, file API and purge work on the
// same path as with any other backend, with no change to the engine. This
// needs PoolDir on the workspace's filesystem and a daemon on this machine;
// otherwise a one-shot run gets a fresh container bound to its workspace.
type pool struct {
	b *Backend

	mu      sync.Mutex
	idle    map[string][]*pooled // by shape.poolKey()
	filling map[string]int
	// size is how many idle containers are kept per configuration
	// (Options.PoolSize, then the dockerPoolSize setting: SetPoolSize).
	size   int
	closed bool
	off    bool
	bg     sync.WaitGroup // fills and removals in flight
	ctx    context.Context
	cancel context.CancelFunc
}

type pooled struct {
	ref *ctrRef
	dir string
}

func newPool(b *Backend) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{b: b, idle: map[string][]*pooled{}, filling: map[string]int{}, size: max(b.opts.PoolSize, 0), ctx: ctx, cancel: cancel}
}

// SetPoolSize changes how many idle containers the one-shot pool keeps
// ready per configuration (0 keeps none): the dockerPoolSize setting.
// Containers above the new size are removed. A pool its builder turned
// off (a negative Options.PoolSize) stays off.
func (b *Backend) SetPoolSize(n int) {
	if b.opts.PoolSize < 0 {
		return
	}
	pl := b.pool
	pl.mu.Lock()
	pl.size = max(n, 0)
	var extra []*pooled
	for key, list := range pl.idle {
		if len(list) > pl.size {
			extra = append(extra, list[pl.size:]...)
			pl.idle[key] = list[:pl.size]
		}
	}
	pl.mu.Unlock()
	if len(extra) == 0 {
		return
	}
	if cli, err := b.client(); err == nil {
		for _, c := range extra {
			pl.discard(cli, c)
		}
	}
}

func (pl *pool) enabled() bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return !pl.off && pl.size > 0 && pl.b.opts.PoolDir != ""
}

// disable turns the pool off for good and empties it.
func (pl *pool) disable(cli *apiClient, why string) {
	pl.mu.Lock()
	pl.off = true
	idle := pl.idle
	pl.idle = map[string][]*pooled{}
	pl.mu.Unlock()
	pl.b.log.Info("The one-shot pool is off.", "reason", why)
	for _, list := range idle {
		for _, c := range list {
			pl.discard(cli, c)
		}
	}
}

// startOneShot runs spec in a pooled container when one is ready, else in
// a fresh one; either way the container is removed after the run.
func (b *Backend) startOneShot(ctx context.Context, cli *apiClient, spec *backends.Spec, s shape) (backends.Process, error) {
	pl := b.pool
	var ref *ctrRef
	// bound is the pooled workspace bound over the run's, when it is a
	// filesystem of its own: it goes after the run.
	bound := ""
	// A pooled container was made before the run's network plumbing
	// existed: a run with network gets a fresh one.
	if pl.enabled() && s.NetDir == "" {
		if c := pl.take(s); c != nil {
			if !c.ref.HostPids && !b.opts.inContainerKill {
				// A daemon in a VM binds through file sharing, where a
				// renamed directory may not follow: no pool there.
				pl.disable(cli, "the docker daemon does not run on this machine's kernel")
				pl.discard(cli, c)
			} else if bind, err := adoptWorkspace(c.dir, s.Workspace); err != nil {
				b.log.Warn("A pooled container could not take the run's workspace; using a fresh container.", "err", err)
				pl.discard(cli, c)
				if errors.Is(err, syscall.EXDEV) {
					pl.disable(cli, "the pool directory is not on the workspaces' filesystem: "+b.opts.PoolDir)
				}
			} else {
				ref = c.ref
				if bind {
					bound = c.dir
				}
			}
		}
		pl.refill(cli, s)
	}
	if ref == nil {
		name := "senclaw-oneshot-" + safeRunID(spec.RunID) + "-" + randomHex(3)
		var err error
		if ref, err = b.createAndStart(ctx, cli, kindOneShot, spec.SandboxID, name, s); err != nil {
			return nil, err
		}
	}
	remove := func() {
		pl.bg.Add(1)
		go func() {
			defer pl.bg.Done()
			if err := b.removeContainer(context.Background(), cli, ref.ID); err != nil {
				b.log.Warn("A one-shot container could not be removed; the next start's reconcile will.", "container", shortID(ref.ID), "err", err)
			}
			if bound != "" {
				releasePoolDir(bound)
			}
		}()
	}
	p, err := b.exec(ctx, cli, ref, spec, s, remove)
	if err != nil {
		remove()
		return nil, b.daemonErr("starting the one-shot run", err)
	}
	return p, nil
}

// take pops a ready container for s, or nil.
func (pl *pool) take(s shape) *pooled {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	key := s.poolKey()
	list := pl.idle[key]
	if len(list) == 0 {
		return nil
	}
	c := list[len(list)-1]
	pl.idle[key] = list[:len(list)-1]
	return c
}

// refill starts making containers for s in the background until the pool
// holds PoolSize of them.
func (pl *pool) refill(cli *apiClient, s shape) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	key := s.poolKey()
	for !pl.closed && !pl.off && len(pl.idle[key])+pl.filling[key] < pl.size {
		pl.filling[key]++
		pl.bg.Add(1)
		go pl.fill(cli, s, key)
	}
}

// fill makes one pooled container.
func (pl *pool) fill(cli *apiClient, s shape, key string) {
	defer pl.bg.Done()
	c, err := pl.create(cli, s)
	pl.mu.Lock()
	pl.filling[key]--
	closed := pl.closed
	if err == nil && !closed {
		pl.idle[key] = append(pl.idle[key], c)
	}
	pl.mu.Unlock()
	switch {
	case err != nil:
		pl.b.log.Warn("A container for the one-shot pool could not be made.", "image", s.Image, "err", err)
	case closed:
		pl.discard(cli, c)
	}
}

func (pl *pool) create(cli *apiClient, s shape) (*pooled, error) {
	// The container's own process waits as no run's user: the engine's
	// idle one (a root engine's uid of no sandbox), else the shape's.
	if u := pl.b.idleUser.Load(); u != nil && u.UID != 0 {
		s.User = fmt.Sprintf("%d:%d", u.UID, u.GID)
	}
	name := "senclaw-pool-" + randomHex(6)
	dir := filepath.Join(pl.b.opts.PoolDir, name)
	if err := makePoolDir(dir, s.User); err != nil {
		return nil, err
	}
	if pl.b.opts.HardQuota && s.DiskMB > 0 {
		// The run's disk quota, hard: a tmpfs of its size, which the
		// container binds from the start (adoptWorkspace).
		if err := diskquota.Tmpfs(dir, s.DiskMB); err != nil {
			releasePoolDir(dir)
			return nil, err
		}
	}
	s.Workspace = dir
	ref, err := pl.b.createAndStart(pl.ctx, cli, kindPool, "", name, s)
	if err != nil {
		releasePoolDir(dir)
		return nil, err
	}
	return &pooled{ref: ref, dir: dir}, nil
}

// discard removes a pooled container and its directory.
func (pl *pool) discard(cli *apiClient, c *pooled) {
	_ = pl.b.removeContainer(context.Background(), cli, c.ref.ID)
	releasePoolDir(c.dir)
}

// releasePoolDir removes a pooled workspace, its tmpfs first.
func releasePoolDir(dir string) {
	_ = diskquota.Unmount(dir)
	_ = os.RemoveAll(dir)
}

// warm fills the pool for s and waits until it is full or ctx ends.
func (pl *pool) warm(ctx context.Context, cli *apiClient, s shape) error {
	if !pl.enabled() {
		return errors.New("the one-shot pool is off: set PoolDir (on the workspaces' filesystem) and a pool size above 0 (the dockerPoolSize setting)")
	}
	pl.refill(cli, s)
	key := s.poolKey()
	for {
		pl.mu.Lock()
		ready, filling, size := len(pl.idle[key]), pl.filling[key], pl.size
		pl.mu.Unlock()
		if ready >= size {
			return nil
		}
		if filling == 0 {
			return fmt.Errorf("the one-shot pool for image %s could not be filled (%d of %d ready); see the log", s.Image, ready, size)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// close removes every idle container and waits for work in flight.
func (pl *pool) close() error {
	pl.mu.Lock()
	pl.closed = true
	idle := pl.idle
	pl.idle = map[string][]*pooled{}
	pl.mu.Unlock()
	pl.cancel()
	cli := pl.b.cli
	var errs []error
	for _, list := range idle {
		for _, c := range list {
			if err := pl.b.removeContainer(context.Background(), cli, c.ref.ID); err != nil {
				errs = append(errs, err)
			}
			releasePoolDir(c.dir)
		}
	}
	pl.bg.Wait()
	return errors.Join(errs...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Warm fills the one-shot pool for spec's settings (its workspace is not
// used) and waits until the pool is full, so that the next one-shot run
// with these settings takes a ready container.
func (b *Backend) Warm(ctx context.Context, spec *backends.Spec) error {
	s, cli, err := b.prepare(spec)
	if err != nil {
		return err
	}
	return b.pool.warm(ctx, cli, s)
}

// ready counts the idle containers for spec's settings (for tests).
func (pl *pool) ready(spec *backends.Spec) int {
	prof, err := profile()
	if err != nil {
		return 0
	}
	s, err := shapeOf(spec, &pl.b.opts, prof.Digest)
	if err != nil {
		return 0
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.idle[s.poolKey()])
}
