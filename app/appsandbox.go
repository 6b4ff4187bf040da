package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/senclaw/sandbox/app/store"
)

// The verbs a capability built on the engine needs to run a server in a
// sandbox of its own (app/spaceapps): the sandbox of kind "app" whose
// workspace is the app's directory, checks that use the engine's own
// guards, and what the engine measures of it. Launch (launch.go) starts it.

// AppSandbox describes a Space App's sandbox.
type AppSandbox struct {
	// ID is the sandbox's id; Name is shown in lists.
	ID, Name string
	// Dir is the app's directory: the sandbox's workspace (read-write,
	// the working directory and HOME). It is the engine's own copy under
	// the data dir, or a folder the caller checked with CheckHostDir.
	Dir string
	// Config holds the rules: fsMode, mounts, network, listen and
	// loopback ports, domains, backend, image, limits. It is validated as
	// on create.
	Config SandboxConfig
	// APIAccess adds the engine's API port to the loopback rules, which
	// no other sandbox may name (a Space App with daemonApi).
	APIAccess bool
	// Tenant is the app's tenant: its sandbox is that tenant's.
	Tenant string
}

// PutAppSandbox creates or replaces the app sandbox a.ID with a's rules.
// The rules apply to the next connection of a run already going (domain
// lists, the network switch); everything else from the next run. A
// backend change removes what the old backend kept (its container); it is
// refused while the sandbox has running processes.
func (e *Engine) PutAppSandbox(ctx context.Context, a AppSandbox) (*Sandbox, error) {
	if a.ID == "" || a.Dir == "" {
		return nil, errors.New("an app sandbox needs an id and a directory")
	}
	base := e.defaultSandbox()
	var old Sandbox
	exists := false
	switch err := e.store.GetSandbox(a.ID, &old); {
	case err == nil:
		if old.Kind != KindApp {
			return nil, &ConflictError{Reason: fmt.Sprintf("sandbox %q exists and is not a Space App's", a.ID)}
		}
		exists = true
		base.CreatedAt, base.LastUsedAt = old.CreatedAt, old.LastUsedAt
		base.UID, base.GID = old.UID, old.GID // the app keeps its uid
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	default:
		// A new app's sandbox is a sandbox like the others: maxSandboxes
		// bounds them all.
		e.createMu.Lock()
		defer e.createMu.Unlock()
		if err := e.roomForSandbox(); err != nil {
			return nil, err
		}
	}
	base.DiskMB = 0 // an app keeps its data in its directory: a quota would kill it
	base.Tenant, base.Kind = a.Tenant, KindApp
	sb, err := e.applyConfig(base, a.Config, true)
	if err != nil {
		return nil, err
	}
	if sb.Backend == "auto" {
		sb.Backend = ""
	}
	sb.ID, sb.Name, sb.Kind = a.ID, a.Name, KindApp
	sb.Workspace, sb.OwnWorkspace = a.Dir, false
	sb.APIAccess = a.APIAccess
	if a.APIAccess {
		sb.Ports.Loopback = append(sb.Ports.Loopback, e.ProtectedPorts()...)
		slices.Sort(sb.Ports.Loopback)
		sb.Ports.Loopback = slices.Compact(sb.Ports.Loopback)
	}
	sb.UpdatedAt = e.now().UTC()
	if exists && old.Backend != sb.Backend {
		if e.live.count(a.ID) > 0 {
			return nil, &ConflictError{Reason: "the app is running; stop it before changing its backend"}
		}
		if p := e.persistent(&old); p != nil {
			if err := p.RemoveSandbox(ctx, a.ID); err != nil {
				return nil, fmt.Errorf("removing the %s state of the app's sandbox: %w", old.Backend, err)
			}
		}
	}
	if !exists {
		if err := e.takeUID(&sb); err != nil {
			return nil, err
		}
	}
	if err := e.store.PutSandbox(sb.ID, sb); err != nil {
		if !exists {
			e.releaseUID(&sb)
		}
		return nil, fmt.Errorf("saving the app's sandbox: %w", err)
	}
	e.forgetStatus(sb.ID)
	e.withLiveState(&sb)
	return &sb, nil
}

// CheckHostDir validates a host directory to give a sandbox (a folder, an
// app run in place) with the same guards as mount sources: absolute,
// existing, not a system root, not the home directory itself, not a
// secret folder or the engine's own, nor one that contains them, and for
// a writable one not a system tree. It returns the canonical path.
//
// For an app of tenant, the folder must lie in the tenant's directory or
// a path the owner granted it.
func (e *Engine) CheckHostDir(field, path, tenant string, writable bool) (string, error) {
	return e.checkTenantDir(field, path, tenant, writable)
}

// CheckSandboxConfig validates cfg as Create would, storing nothing.
func (e *Engine) CheckSandboxConfig(cfg SandboxConfig, tenant string) error {
	_, err := e.newSandboxFor(tenant, cfg)
	return err
}

// ProtectedPorts are the engine's own API ports (ProtectPort).
func (e *Engine) ProtectedPorts() []int {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	return slices.Clone(e.net.protected)
}

// NetworkAllowed says how many connections of the sandbox the egress
// proxy let through since the engine started.
func (e *Engine) NetworkAllowed(id string) int { return e.proxy.Allowed(id) }

// HostStats is Stats from the engine's own process sampling only: it
// never asks a container daemon, so a list polled every second stays
// cheap. For a container whose processes this machine sees (a local
// daemon), the tree below its run is sampled like any other.
func (e *Engine) HostStats(id string) (*Stats, error) {
	var sb Sandbox // read as stored: no container status, no daemon call
	if err := e.store.GetSandbox(id, &sb); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, &NotFoundError{Kind: "sandbox", ID: id}
		}
		return nil, err
	}
	st := e.hostStats(&sb)
	st.Denied, st.RecentDenied = e.proxy.Denials(id)
	return st, nil
}

// Reconciled is closed once the backends' start-up reconciliation (what an
// earlier engine left behind) is done, or has given up; a supervisor
// starts its servers after it so that no clean-up ends them.
func (e *Engine) Reconciled() <-chan struct{} { return e.reconciled }

// PutSpaceApp stores a Space App's document; app/spaceapps owns its shape.
func (e *Engine) PutSpaceApp(id string, v any) error {
	if err := e.store.PutApp(id, v); err != nil {
		return err
	}
	if data, err := json.Marshal(v); err == nil {
		e.hostRun.put(id, data)
	}
	return nil
}

// DeleteSpaceApp removes the Space App's document.
func (e *Engine) DeleteSpaceApp(id string) error {
	if err := e.store.DeleteApp(id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	e.hostRun.put(id, nil)
	return nil
}

// EachSpaceApp calls fn with every stored Space App document.
func (e *Engine) EachSpaceApp(fn func(data []byte) error) error { return e.store.EachApp(fn) }

// Machinery reports whether a process (by its command line) is the
// engine's plumbing in a sandbox's tree rather than the sandboxed code's:
// bwrap, the network forwarder, a tracer.
func Machinery(command string) bool { return machinery(command) }
