package app

import (
	"context"
	"fmt"

	"github.com/senclaw/sandbox/backends"
)

// persistent returns the sandbox's backend when it keeps state between
// runs (a container), else nil.
func (e *Engine) persistent(sb *Sandbox) backends.Persistent {
	b := e.backendOf(sb)
	if b == nil {
		return nil
	}
	p, _ := b.(backends.Persistent)
	return p
}

// Stop kills every process of the sandbox (and stops its container) and
// returns how many runs were stopped.
func (e *Engine) Stop(ctx context.Context, id string) (int, error) {
	sb, err := e.Get(id)
	if err != nil {
		return 0, err
	}
	e.readyChanged(id)
	n := e.live.killSandbox(id, "stopped")
	defer e.forgetStatus(id)
	if p := e.persistent(sb); p != nil {
		if err := p.StopSandbox(ctx, id); err != nil {
			e.linkLost(sb, err)
			return n, fmt.Errorf("stopping the container: %w", err)
		}
	}
	return n, nil
}

// StopAll stops every sandbox's processes and containers.
func (e *Engine) StopAll(ctx context.Context) int {
	e.readyChanged("")
	n := e.live.killAll()
	all, _ := e.List()
	for i := range all {
		if p := e.persistent(&all[i]); p != nil {
			_ = p.StopSandbox(ctx, all[i].ID)
		}
	}
	return n
}

// StartSandbox prepares the sandbox ahead of its first run: a container is
// created and started; a bwrap sandbox has nothing to start, each run
// starts its own.
func (e *Engine) StartSandbox(ctx context.Context, id string) (string, error) {
	sb, err := e.Get(id)
	if err != nil {
		return "", err
	}
	if e.persistent(sb) == nil {
		return "nothing to start: each run of this sandbox starts its own isolated process", nil
	}
	res, err := e.Exec(ctx, id, RunRequest{Source: SourceREST, Argv: []string{"true"}})
	if err != nil {
		return "", err
	}
	if !res.Record.OK() {
		return "", fmt.Errorf("the container did not start: %s", res.Record.Error)
	}
	return "the container is running", nil
}

// Recreate replaces the sandbox's container with one made from its saved
// settings; workspace files are kept.
func (e *Engine) Recreate(ctx context.Context, id string) (string, error) {
	sb, err := e.Get(id)
	if err != nil {
		return "", err
	}
	p := e.persistent(sb)
	if p == nil {
		return "nothing to recreate: each run of this sandbox already starts from its saved settings", nil
	}
	if e.live.count(id) > 0 {
		return "", &ConflictError{Reason: "the sandbox has running processes; stop it first, then recreate"}
	}
	spec, err := e.specFor(ctx, sb)
	if err != nil {
		return "", err
	}
	defer e.forgetStatus(id)
	// The container binds the workspace as it is when it is made: its
	// image, if it gets one, must be there first.
	if !remoteSandbox(sb) {
		e.prepareDisk(sb, nil)
	}
	if err := p.Recreate(ctx, spec); err != nil {
		return "", fmt.Errorf("recreating the container: %w", err)
	}
	return "the container was recreated from the saved settings; workspace files were kept", nil
}

// specFor is the Spec of sb with no command, for backend calls that shape
// what a backend keeps (recreate, drift checks).
func (e *Engine) specFor(ctx context.Context, sb *Sandbox) (*backends.Spec, error) {
	spec := e.shapeSpec(sb, e.userOf(sb))
	// The masked interpreters shape a container too (its masks).
	e.maskInterpreters(spec)
	if wantsNetwork(sb) && e.opts.Forwarder != "" {
		// The plumbing's paths are part of a container's shape; a run
		// binds them (network.go), and a status check must see the same.
		spec.Net = &backends.NetPlumbing{Dir: e.netDir(sb.ID), Forwarder: e.opts.Forwarder}
	}
	return spec, nil
}
