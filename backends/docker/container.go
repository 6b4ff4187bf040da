package docker

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker/engineapi"
)

// recreateIdle is how long a sandbox must have been idle before a run may
// recreate its drifted container on its own.
const recreateIdle = 5 * time.Minute

// ctrRef is a started container.
type ctrRef struct {
	ID   string
	Hash string
	// InitPid is the container's PID 1 as the daemon reports it.
	InitPid int
	// HostPids is true when InitPid is a pid of this machine.
	HostPids bool
}

// sandboxState is what the backend remembers of one persistent sandbox.
type sandboxState struct {
	// mu serialises creating, recreating and removing the container.
	mu sync.Mutex
	// ready is the container last seen running with the current hash; it
	// spares an inspect per run. Guarded by mu.
	ready *ctrRef
	// running and lastUsed are guarded by Backend.mu.
	running  int
	lastUsed time.Time
}

// NeedsRecreateError refuses a run in a sandbox whose container no longer
// matches its settings while it is in use.
type NeedsRecreateError struct {
	SandboxID string
}

// Error says why the run was refused and how to recreate.
func (e *NeedsRecreateError) Error() string {
	return fmt.Sprintf("sandbox %s needs recreate: its settings changed since its container was made, and it was used in the last %s so it was not recreated under a running session; recreate it (the engine's recreate verb; workspace files are kept) or wait until it has been idle for %s", e.SandboxID, recreateIdle, recreateIdle)
}

// ImageMissingError refuses a run whose image is not on the daemon; runs
// never pull.
type ImageMissingError struct {
	Image string
}

// Error says how to get the image.
func (e *ImageMissingError) Error() string {
	return fmt.Sprintf("image %q is not on the docker daemon, and SenClaw never pulls implicitly; get it with `docker pull %s`, or build one offline with `docker import` (scripts/docker-test-image.sh builds senclaw-test/busybox:latest)", e.Image, e.Image)
}

func (b *Backend) state(sandboxID string) *sandboxState {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.sandboxes[sandboxID]
	if st == nil {
		st = &sandboxState{}
		b.sandboxes[sandboxID] = st
	}
	return st
}

// begin and end count a run of st.
func (b *Backend) begin(st *sandboxState) {
	b.mu.Lock()
	st.running++
	st.lastUsed = b.now()
	b.mu.Unlock()
}

func (b *Backend) end(st *sandboxState) {
	b.mu.Lock()
	st.running--
	st.lastUsed = b.now()
	b.mu.Unlock()
}

// ensureSandbox returns the sandbox's running container, making, starting
// or (when idle) recreating it, and counts a run. Call b.end when the run
// ends.
func (b *Backend) ensureSandbox(ctx context.Context, cli *engineapi.Client, st *sandboxState, spec *backends.Spec, s shape) (*ctrRef, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := s.hash()
	if st.ready != nil && st.ready.Hash == h {
		b.begin(st)
		return st.ready, nil
	}
	st.ready = nil
	name := containerName(spec.SandboxID)
	ictx, cancel := callCtx(ctx, callTimeout)
	ins, err := cli.ContainerInspect(ictx, name)
	cancel()
	switch {
	case engineapi.IsNotFound(err):
	case err != nil:
		return nil, b.daemonErr("inspecting the sandbox's container", err)
	case ins.Config.Labels[labelOwner] != b.opts.Owner:
		return nil, fmt.Errorf("the container %s belongs to another SenClaw engine (owner %q, this one is %q); remove it with `docker rm -f %s` if that engine is gone", name, ins.Config.Labels[labelOwner], b.opts.Owner, name)
	case ins.Config.Labels[labelHash] != h:
		if !b.idle(ctx, cli, st, ins) {
			return nil, &NeedsRecreateError{SandboxID: spec.SandboxID}
		}
		b.log.Info("Recreating an idle sandbox's container: its settings changed.", "sandbox", spec.SandboxID)
		if err := b.removeContainer(ctx, cli, ins.ID); err != nil {
			return nil, err
		}
	case !ins.State.Running:
		sctx, cancel := callCtx(ctx, callTimeout)
		err := cli.ContainerStart(sctx, ins.ID)
		cancel()
		if err != nil {
			return nil, b.daemonErr("starting the sandbox's container", err)
		}
		st.ready, err = b.refOf(ctx, cli, ins.ID)
		if err != nil {
			return nil, err
		}
		b.begin(st)
		return st.ready, nil
	default:
		st.ready = &ctrRef{ID: ins.ID, Hash: h, InitPid: ins.State.Pid}
		st.ready.HostPids = !b.opts.inContainerKill && sharesHostPids(ins.State.Pid, ins.ID)
		b.begin(st)
		return st.ready, nil
	}
	ref, err := b.createAndStart(ctx, cli, kindSandbox, spec.SandboxID, name, s)
	if err != nil {
		return nil, err
	}
	st.ready = ref
	b.begin(st)
	return ref, nil
}

// idle reports whether no run is going in the container and none has been
// for recreateIdle, as far as this engine knows.
func (b *Backend) idle(ctx context.Context, cli *engineapi.Client, st *sandboxState, ins engineapi.Container) bool {
	b.mu.Lock()
	busy := st.running > 0 || (!st.lastUsed.IsZero() && b.now().Sub(st.lastUsed) <= recreateIdle)
	b.mu.Unlock()
	if busy {
		return false
	}
	for _, id := range ins.ExecIDs {
		ictx, cancel := callCtx(ctx, callTimeout)
		e, err := cli.ExecInspect(ictx, id)
		cancel()
		if err == nil && e.Running {
			return false
		}
	}
	return true
}

// createAndStart makes and starts a container of shape s. It checks the
// image first: a run never pulls.
func (b *Backend) createAndStart(ctx context.Context, cli *engineapi.Client, kind, sandboxID, name string, s shape) (*ctrRef, error) {
	prof, err := profile()
	if err != nil {
		return nil, err
	}
	ictx, cancel := callCtx(ctx, callTimeout)
	_, err = cli.ImageInspect(ictx, s.Image)
	cancel()
	if engineapi.IsNotFound(err) {
		return nil, &ImageMissingError{Image: s.Image}
	}
	if err != nil {
		return nil, b.daemonErr("looking up image "+s.Image, err)
	}
	if b.ep.local() {
		if err := checkMountSources(s); err != nil {
			return nil, err
		}
	}
	cfg, host := containerConfig(s, labelsFor(b.opts.Owner, kind, sandboxID, s, b.now()), prof.JSON)
	cctx, cancel := callCtx(ctx, createTimeout)
	defer cancel()
	id, err := cli.ContainerCreate(cctx, cfg, host, name)
	if err != nil {
		if cctx.Err() != nil {
			// Given up on (the engine stopping, a timeout), the create
			// may still have been done by the daemon: the container of
			// the name we just made up goes too, or it would be left
			// behind. (Not for other errors: a name in use is another's.)
			b.removeCancelled(context.WithoutCancel(ctx), cli, name)
		}
		return nil, b.daemonErr("creating the container "+name, err)
	}
	if err := cli.ContainerStart(cctx, id); err != nil {
		_ = b.removeContainer(context.WithoutCancel(ctx), cli, id)
		return nil, b.daemonErr("starting the container "+name+" (it was removed again)", err)
	}
	ref, err := b.refOf(ctx, cli, id)
	if err != nil {
		_ = b.removeContainer(context.WithoutCancel(ctx), cli, id)
		return nil, err
	}
	ref.Hash = s.hash()
	return ref, nil
}

// refOf inspects a started container.
func (b *Backend) refOf(ctx context.Context, cli *engineapi.Client, id string) (*ctrRef, error) {
	ictx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	ins, err := cli.ContainerInspect(ictx, id)
	if err != nil {
		return nil, b.daemonErr("inspecting a started container", err)
	}
	return &ctrRef{
		ID:       ins.ID,
		Hash:     ins.Config.Labels[labelHash],
		InitPid:  ins.State.Pid,
		HostPids: !b.opts.inContainerKill && sharesHostPids(ins.State.Pid, ins.ID),
	}, nil
}

// removeContainer force-removes a container; one already gone is fine.
func (b *Backend) removeContainer(ctx context.Context, cli *engineapi.Client, id string) error {
	rctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	err := cli.ContainerRemove(rctx, id, true)
	b.sweeps.Delete(id)
	if err != nil && !engineapi.IsNotFound(err) {
		return b.daemonErr("removing container "+shortID(id), err)
	}
	return nil
}

// removeCancelled removes the container name whose creation was
// cancelled (the engine closing its pool): the daemon may make it all the
// same, a moment after the call gave up, so it is looked for a second.
func (b *Backend) removeCancelled(ctx context.Context, cli *engineapi.Client, name string) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rctx, cancel := callCtx(ctx, callTimeout)
		err := cli.ContainerRemove(rctx, name, true)
		cancel()
		if err == nil {
			return
		}
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// checkMountSources refuses mounts whose source path now goes through a
// symlink, and the workspace when its path is meant to be exact. Those
// paths are stored canonical, and the Docker daemon follows symlinks when
// it creates the container: a directory swapped for a link (by code in a
// sandbox that may write above it) must not get the link's target bound.
// (A remote daemon sees its own disk; there is nothing to check here
// then.)
func checkMountSources(s shape) error {
	type bind struct{ what, path string }
	var binds []bind
	if s.WorkspaceExact {
		binds = append(binds, bind{"the workspace", s.Workspace})
	}
	for _, m := range s.Mounts {
		binds = append(binds, bind{"the mount source", m.Source})
	}
	for _, p := range s.Protected {
		binds = append(binds, bind{"the read-only agents' or git's file", p.Source})
	}
	for _, b := range binds {
		real, err := filepath.EvalSymlinks(b.path)
		if err != nil {
			return fmt.Errorf("refused: %s %s cannot be found (%v); check that it still exists", b.what, b.path, err)
		}
		if real != b.path {
			return fmt.Errorf("refused: %s %s now leads to %s (a symlink was put in its path since it was checked); the container was not made. Remove the symlink, or give the directory again", b.what, b.path, real)
		}
	}
	return nil
}
