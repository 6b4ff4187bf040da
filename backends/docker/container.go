package docker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
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
	// Remote is true for a container of a daemon elsewhere: its runs are
	// wrapped by the forwarder copied in (remote.go).
	Remote bool
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
	// Engine names a named engine of the settings ("" for the local one).
	Engine string
}

// Error says how to get the image.
func (e *ImageMissingError) Error() string {
	if e.Engine != "" {
		return fmt.Sprintf("image %q is not on engine %s, and SenClaw never pulls implicitly, there as here; get it there with `docker --context %s pull %s` (or DOCKER_HOST=... docker pull), or copy it with `docker save %s | docker --context %s load`", e.Image, e.Engine, e.Engine, e.Image, e.Image, e.Engine)
	}
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
func (b *Backend) ensureSandbox(ctx context.Context, cli *apiClient, st *sandboxState, spec *backends.Spec, s shape) (*ctrRef, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	h := s.hash()
	if st.ready != nil && st.ready.Hash == h {
		b.begin(st)
		return st.ready, nil
	}
	st.ready = nil
	name := containerName(spec.SandboxID)
	ins, err := inspectContainer(ctx, cli, name)
	switch {
	case cerrdefs.IsNotFound(err):
	case err != nil:
		return nil, b.daemonErr("inspecting the sandbox's container", err)
	case ins.Labels[labelOwner] != b.opts.Owner:
		return nil, fmt.Errorf("the container %s belongs to another SenClaw engine (owner %q, this one is %q); remove it with `docker rm -f %s` if that engine is gone", name, ins.Labels[labelOwner], b.opts.Owner, name)
	case ins.Labels[labelHash] != h:
		if !b.idle(ctx, cli, st, ins) {
			return nil, &NeedsRecreateError{SandboxID: spec.SandboxID}
		}
		b.log.Info("Recreating an idle sandbox's container: its settings changed.", "sandbox", spec.SandboxID)
		if err := b.removeContainer(ctx, cli, ins.ID); err != nil {
			return nil, err
		}
	case !ins.Running:
		// The daemon binds the mounts' sources by path again as it
		// starts the container, following links: a source swapped for
		// a link since the container was made would get its target.
		var binds []bindID
		if b.ep.local() {
			if binds, err = boundIDs(s); err != nil {
				return nil, err
			}
		}
		sctx, cancel := callCtx(ctx, callTimeout)
		_, err := cli.ContainerStart(sctx, ins.ID, client.ContainerStartOptions{})
		cancel()
		if err != nil {
			return nil, b.daemonErr("starting the sandbox's container", err)
		}
		ref, err := b.refOf(ctx, cli, ins.ID)
		if err == nil && ref.HostPids {
			err = checkBinds(ref.InitPid, binds)
		}
		if err != nil {
			_ = b.removeContainer(context.WithoutCancel(ctx), cli, ins.ID)
			return nil, err
		}
		st.ready = ref
		b.begin(st)
		return st.ready, nil
	default:
		st.ready = &ctrRef{ID: ins.ID, Hash: h, InitPid: ins.Pid, Remote: s.Remote}
		st.ready.HostPids = !s.Remote && !b.opts.inContainerKill && sharesHostPids(ins.Pid, ins.ID)
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
func (b *Backend) idle(ctx context.Context, cli *apiClient, st *sandboxState, ins inspected) bool {
	b.mu.Lock()
	busy := st.running > 0 || (!st.lastUsed.IsZero() && b.now().Sub(st.lastUsed) <= recreateIdle)
	b.mu.Unlock()
	if busy {
		return false
	}
	for _, id := range ins.ExecIDs {
		ictx, cancel := callCtx(ctx, callTimeout)
		e, err := cli.ExecInspect(ictx, id, client.ExecInspectOptions{})
		cancel()
		if err == nil && e.Running {
			return false
		}
	}
	return true
}

// createAndStart makes and starts a container of shape s. It checks the
// image first: a run never pulls.
func (b *Backend) createAndStart(ctx context.Context, cli *apiClient, kind, sandboxID, name string, s shape) (*ctrRef, error) {
	prof, err := profile()
	if err != nil {
		return nil, err
	}
	ictx, cancel := callCtx(ctx, callTimeout)
	_, err = cli.ImageInspect(ictx, s.Image)
	cancel()
	if cerrdefs.IsNotFound(err) {
		return nil, &ImageMissingError{Image: s.Image, Engine: b.remoteName()}
	}
	if err != nil {
		return nil, b.daemonErr("looking up image "+s.Image, err)
	}
	var binds []bindID
	if b.ep.local() {
		if binds, err = boundIDs(s); err != nil {
			return nil, err
		}
	}
	if s.Remote {
		if err := b.checkPlatform(); err != nil {
			return nil, err
		}
		if err := b.prepareVolumes(ctx, cli, s); err != nil {
			return nil, err
		}
	}
	cfg, host := containerConfig(s, labelsFor(b.opts.Owner, kind, sandboxID, s, b.now()), prof.JSON)
	cctx, cancel := callCtx(ctx, createTimeout)
	defer cancel()
	created, err := cli.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host, Name: name})
	if err == nil && created.ID == "" {
		err = errors.New("the daemon made the container but gave no id")
	}
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
	id := created.ID
	if s.Remote {
		if err := b.plumbIn(ctx, cli, id, s); err != nil {
			_ = b.removeContainer(context.WithoutCancel(ctx), cli, id)
			return nil, err
		}
	}
	if _, err := cli.ContainerStart(cctx, id, client.ContainerStartOptions{}); err != nil {
		_ = b.removeContainer(context.WithoutCancel(ctx), cli, id)
		return nil, b.daemonErr("starting the container "+name+" (it was removed again)", err)
	}
	ref, err := b.refOf(ctx, cli, id)
	if err == nil && ref.HostPids {
		// Before anything of the sandbox runs in it.
		err = checkBinds(ref.InitPid, binds)
	}
	if err != nil {
		_ = b.removeContainer(context.WithoutCancel(ctx), cli, id)
		return nil, err
	}
	ref.Hash = s.hash()
	ref.Remote = s.Remote
	return ref, nil
}

// refOf inspects a started container.
func (b *Backend) refOf(ctx context.Context, cli *apiClient, id string) (*ctrRef, error) {
	ins, err := inspectContainer(ctx, cli, id)
	if err != nil {
		return nil, b.daemonErr("inspecting a started container", err)
	}
	remote := b.Elsewhere()
	return &ctrRef{
		ID:       ins.ID,
		Hash:     ins.Labels[labelHash],
		InitPid:  ins.Pid,
		HostPids: !remote && !b.opts.inContainerKill && sharesHostPids(ins.Pid, ins.ID),
		Remote:   remote,
	}, nil
}

// inspected is what the backend reads of a container's inspect.
type inspected struct {
	ID      string
	Running bool
	// Pid is the container's PID 1 as the daemon reports it.
	Pid     int
	Labels  map[string]string
	ExecIDs []string
}

// inspectContainer inspects a container (by id or name). A part the
// daemon left out reads as empty.
func inspectContainer(ctx context.Context, cli *apiClient, id string) (inspected, error) {
	ictx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	res, err := cli.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
	if err != nil {
		return inspected{}, err
	}
	ins := inspected{ID: res.Container.ID, ExecIDs: res.Container.ExecIDs}
	if st := res.Container.State; st != nil {
		ins.Running, ins.Pid = st.Running, st.Pid
	}
	if cfg := res.Container.Config; cfg != nil {
		ins.Labels = cfg.Labels
	}
	return ins, nil
}

// removeContainer force-removes a container; one already gone is fine.
func (b *Backend) removeContainer(ctx context.Context, cli *apiClient, id string) error {
	rctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	_, err := cli.ContainerRemove(rctx, id, removeForce)
	b.sweeps.Delete(id)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return b.daemonErr("removing container "+shortID(id), err)
	}
	return nil
}

// removeCancelled removes the container name whose creation was
// cancelled (the engine closing its pool): the daemon may make it all the
// same, a moment after the call gave up, so it is looked for a second.
func (b *Backend) removeCancelled(ctx context.Context, cli *apiClient, name string) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rctx, cancel := callCtx(ctx, callTimeout)
		_, err := cli.ContainerRemove(rctx, name, removeForce)
		cancel()
		if err == nil {
			return
		}
	}
}

// removeForce removes a container, killing it first, with its anonymous
// volumes.
var removeForce = client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// checkMountSources refuses mounts whose source path now goes through a
// symlink, and the workspace when its path is meant to be exact. Those
// paths are stored canonical, and the Docker daemon follows symlinks when
// it starts the container (each time it does): a directory swapped for a
// link (by code in a sandbox that may write above it) must not get the
// link's target bound.
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
