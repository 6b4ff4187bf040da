package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
)

// prepare works out the container shape spec asks for (with the seccomp
// profile's digest, part of the config hash) and a daemon client.
func (b *Backend) prepare(spec *backends.Spec) (shape, *apiClient, error) {
	prof, err := profile()
	if err != nil {
		return shape{}, nil, err
	}
	s, err := shapeOf(spec, &b.opts, prof.Digest)
	if err != nil {
		return shape{}, nil, err
	}
	cli, err := b.clientFor(spec.SandboxID)
	if err != nil {
		return shape{}, nil, err
	}
	if b.Elsewhere() {
		if err := b.remoteShape(&s, spec); err != nil {
			return shape{}, nil, err
		}
	} else if spec.Net != nil && s.NetDir == "" {
		return shape{}, nil, errors.New("the run's network has no plumbing directory, which this machine's docker daemon binds")
	}
	if s.Masked, err = b.masksFor(spec, s, cli); err != nil {
		return shape{}, nil, err
	}
	if b.ep.local() && diskquota.Mounted(s.Workspace) {
		s.WorkspaceFS = "mount"
	}
	return s, cli, nil
}

// SandboxStatus says whether spec's sandbox has a container, whether it
// runs, and whether it still matches spec (its hash label).
func (b *Backend) SandboxStatus(ctx context.Context, spec *backends.Spec) (string, error) {
	s, cli, err := b.prepare(spec)
	if err != nil {
		return "", err
	}
	ins, err := inspectContainer(ctx, cli, containerName(spec.SandboxID))
	switch {
	case cerrdefs.IsNotFound(err):
		return backends.StatusNone, nil
	case err != nil:
		return "", b.daemonErr("inspecting the sandbox's container", err)
	case ins.Labels[labelHash] != s.hash():
		return backends.StatusNeedsRecreate, nil
	case ins.Running:
		return backends.StatusRunning, nil
	}
	return backends.StatusStopped, nil
}

// Recreate replaces the sandbox's container with one made from spec. The
// workspace is on this machine (or, elsewhere, a volume that stays), so
// its files stay. It refuses while a run is going.
func (b *Backend) Recreate(ctx context.Context, spec *backends.Spec) error {
	s, cli, err := b.prepare(spec)
	if err != nil {
		return err
	}
	st := b.state(spec.SandboxID)
	st.mu.Lock()
	defer st.mu.Unlock()
	b.mu.Lock()
	running := st.running
	b.mu.Unlock()
	if running > 0 {
		return fmt.Errorf("sandbox %s has %d run(s) going; wait for them or stop the sandbox, then recreate", spec.SandboxID, running)
	}
	st.ready = nil
	if err := b.removeContainer(ctx, cli, containerName(spec.SandboxID)); err != nil {
		return err
	}
	ref, err := b.createAndStart(ctx, cli, kindSandbox, spec.SandboxID, containerName(spec.SandboxID), s)
	if err != nil {
		return err
	}
	st.ready = ref
	return nil
}

// forget locks the sandbox's state and drops its ready container, for a
// stop or a removal; the caller calls unlock when done.
func (b *Backend) forget(sandboxID string) (*apiClient, func(), error) {
	cli, err := b.clientFor(sandboxID)
	if err != nil {
		return nil, nil, err
	}
	st := b.state(sandboxID)
	st.mu.Lock()
	st.ready = nil
	return cli, st.mu.Unlock, nil
}

// StopSandbox stops the sandbox's container, which kills every process in
// it; the next run starts it again.
func (b *Backend) StopSandbox(ctx context.Context, sandboxID string) error {
	cli, unlock, err := b.forget(sandboxID)
	if err != nil {
		return err
	}
	defer unlock()
	sctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	_, err = cli.ContainerStop(sctx, containerName(sandboxID), stopGently)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return b.daemonErr("stopping the sandbox's container", err)
	}
	return nil
}

// RemoveSandbox removes the sandbox's container (processes included). The
// workspace is the engine's to remove.
func (b *Backend) RemoveSandbox(ctx context.Context, sandboxID string) error {
	cli, unlock, err := b.forget(sandboxID)
	if err != nil {
		return err
	}
	defer unlock()
	if err := b.removeContainer(ctx, cli, containerName(sandboxID)); err != nil {
		return err
	}
	b.mu.Lock()
	if st := b.sandboxes[sandboxID]; st != nil && st.running == 0 {
		delete(b.sandboxes, sandboxID)
	}
	b.mu.Unlock()
	return nil
}
