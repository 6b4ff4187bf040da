package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/docker"
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newRunID returns an id that sorts in creation order (the store prunes the
// smallest ids first).
func (e *Engine) newRunID() string {
	return fmt.Sprintf("r%016x%s", e.now().UnixNano(), randomHex(2))
}

// knownBackend reports whether name is a configured backend.
func (e *Engine) knownBackend(name string) bool {
	return e.probes.find(name) != nil
}

// applyConfig validates cfg onto a copy of sb and returns it. Create and
// update share it, so the same input is judged the same way.
func (e *Engine) applyConfig(sb Sandbox, cfg SandboxConfig, create bool) (Sandbox, error) {
	var err error
	if cfg.Name != nil {
		if sb.Name, err = checkName(*cfg.Name); err != nil {
			return sb, err
		}
	}
	if cfg.Backend != nil {
		name := strings.TrimSpace(*cfg.Backend)
		switch {
		case !create && name != sb.Backend:
			return sb, badField("backend", name, "cannot be changed; create a new sandbox instead")
		case name != "" && name != "auto" && !e.knownBackend(name):
			return sb, badField("backend", name, "unknown backend: use %s", strings.Join(e.backendNames(), ", "))
		}
		if create {
			sb.Backend = name
		}
	}
	if cfg.Engine != nil {
		name := strings.TrimSpace(*cfg.Engine)
		if name == LocalEngine {
			name = ""
		}
		switch {
		case !create && name != sb.Engine:
			return sb, badField("engine", *cfg.Engine, "cannot be changed: the sandbox's files live on its engine; create a new sandbox there instead")
		case name != "" && !slices.Contains(e.engineNames(), name):
			return sb, badField("engine", name, "is not an engine of the settings: use %s (senclaw caps lists them; engines are added in the settings)", strings.Join(e.engineNames(), ", "))
		}
		if create && name != "" {
			sb.Engine = name
			switch sb.Backend {
			case "", "auto":
				// An engine is a Docker engine: it asks for the
				// container backend.
				sb.Backend = "docker"
			case "docker":
			default:
				return sb, badField("engine", name, "is a Docker engine, and this sandbox's backend is %s; drop the backend, or use docker", sb.Backend)
			}
			sb.Workspace, sb.OwnWorkspace = remoteWorkspace, false
		}
	}
	if cfg.ProjectDir != nil {
		if !create {
			return sb, badField("projectDir", *cfg.ProjectDir, "cannot be changed; create a new sandbox instead")
		}
		if sb.Engine != "" {
			return sb, badField("projectDir", *cfg.ProjectDir, "a folder of this machine cannot be the workspace of a sandbox on engine %s, a Docker engine on another machine; mount it as a copy instead (mounts with copy: true)", sb.Engine)
		}
		if cfg.DiskMB != nil {
			return sb, badField("diskMb", *cfg.DiskMB, "a project dir has no disk quota; drop diskMb")
		}
		dir, err := e.checkTenantDir("projectDir", *cfg.ProjectDir, sb.Tenant, true)
		if err != nil {
			return sb, err
		}
		sb.Workspace, sb.OwnWorkspace, sb.DiskMB = dir, false, 0
		if err := e.checkProjectIDMap(sb); err != nil {
			return sb, err
		}
	}
	if cfg.Image != nil {
		if !create && *cfg.Image != sb.Image {
			return sb, badField("image", *cfg.Image, "cannot be changed; create a new sandbox instead")
		}
		if sb.Image, err = checkImage("image", *cfg.Image); err != nil {
			return sb, err
		}
		if create && sb.Image != "" && sb.Engine == "" {
			switch sb.Backend {
			case "", "auto":
				// An image is a container's: it asks for the container
				// backend rather than being ignored by another.
				sb.Backend = "docker"
			case "docker":
			default:
				return sb, badField("image", *cfg.Image, "applies to container backends (docker); this sandbox's backend is %s, which runs this machine's own programs: drop the image, or use the docker backend", sb.Backend)
			}
		}
	}
	if cfg.FsMode != nil {
		if sb.FsMode, err = checkFsMode("fsMode", *cfg.FsMode); err != nil {
			return sb, err
		}
	}
	if cfg.Mounts != nil {
		for i, m := range cfg.Mounts {
			if err := checkText("mounts["+strconv.Itoa(i)+"].source", m.Source); err != nil {
				return sb, err
			}
		}
		check := func(field, path string, writable bool) (string, error) {
			return e.checkTenantDir(field, path, sb.Tenant, writable)
		}
		if sb.Mounts, err = checkMounts(cfg.Mounts, check); err != nil {
			return sb, err
		}
		if err := checkMountCopies(sb); err != nil {
			return sb, err
		}
		if sb.Engine == "" {
			if err := e.checkIDMapped(sb); err != nil {
				return sb, err
			}
		}
	}
	if cfg.Network != nil {
		sb.Network = *cfg.Network
	}
	if cfg.Listen != nil || cfg.Connect != nil || cfg.Loopback != nil {
		listen, connect, loopback := sb.Ports.Listen, sb.Ports.Connect, sb.Ports.Loopback
		if cfg.Listen != nil {
			listen = cfg.Listen
		}
		if cfg.Connect != nil {
			connect = cfg.Connect
		}
		if cfg.Loopback != nil {
			loopback = cfg.Loopback
		}
		domains, deny, web := sb.Ports.Domains, sb.Ports.DenyDomains, sb.Ports.AllowHTTP
		if sb.Ports, err = checkPortRules(listen, connect, loopback); err != nil {
			return sb, err
		}
		sb.Ports.Domains, sb.Ports.DenyDomains, sb.Ports.AllowHTTP = domains, deny, web
	}
	if cfg.Domains != nil {
		if sb.Ports.Domains, err = checkDomains("domains", cfg.Domains, true); err != nil {
			return sb, err
		}
	}
	if cfg.DenyDomains != nil {
		if sb.Ports.DenyDomains, err = checkDomains("denyDomains", cfg.DenyDomains, false); err != nil {
			return sb, err
		}
	}
	if cfg.AllowHTTP != nil {
		if sb.Ports.AllowHTTP, err = checkHTTPRules(cfg.AllowHTTP); err != nil {
			return sb, err
		}
	}
	if cfg.Secrets != nil {
		if sb.Secrets, err = e.checkSecrets("secrets", cfg.Secrets); err != nil {
			return sb, err
		}
	}
	if sb.Ports.Domains == nil {
		sb.Ports.Domains = []string{}
	}
	if sb.Ports.DenyDomains == nil {
		sb.Ports.DenyDomains = []string{}
	}
	if err := e.checkNetPorts(sb.Ports); err != nil {
		return sb, err
	}
	if cfg.CPUs != nil {
		if err := checkCPUs("cpus", *cfg.CPUs); err != nil {
			return sb, err
		}
		sb.CPUs = *cfg.CPUs
	}
	if cfg.MemoryMB != nil {
		if err := checkMemory("memoryMb", *cfg.MemoryMB); err != nil {
			return sb, err
		}
		sb.MemoryMB = *cfg.MemoryMB
	}
	if cfg.Pids != nil {
		if err := checkPids("pids", *cfg.Pids); err != nil {
			return sb, err
		}
		sb.Pids = *cfg.Pids
	}
	if cfg.DiskMB != nil {
		if err := checkDisk("diskMb", *cfg.DiskMB); err != nil {
			return sb, err
		}
		sb.DiskMB = *cfg.DiskMB
	}
	if cfg.TimeoutMs != nil {
		if err := checkTimeout("timeoutMs", *cfg.TimeoutMs); err != nil {
			return sb, err
		}
		sb.TimeoutMs = *cfg.TimeoutMs
	}
	if cfg.Env != nil {
		if err := checkEnv("env", cfg.Env); err != nil {
			return sb, err
		}
		sb.Env = cfg.Env
	}
	if err := checkSecretEnv("env", sb.Env, sb.Secrets); err != nil {
		return sb, err
	}
	if err := e.checkTenantSandbox(&sb); err != nil {
		return sb, err
	}
	return sb, nil
}

func (e *Engine) backendNames() []string {
	var names []string
	for _, b := range e.opts.Backends {
		names = append(names, b.Name())
	}
	return append(names, "auto")
}

// defaultSandbox is a sandbox filled with the settings' defaults.
func (e *Engine) defaultSandbox() Sandbox {
	s := e.Settings()
	now := e.now().UTC()
	return Sandbox{
		FsMode:    s.DefaultFsMode,
		Mounts:    []backends.Mount{},
		Network:   s.DefaultNetwork,
		Ports:     backends.PortRules{Listen: []int{}, Connect: []int{}, Loopback: []int{}},
		CPUs:      s.DefaultCPUs,
		MemoryMB:  s.DefaultMemoryMB,
		Pids:      s.DefaultPids,
		DiskMB:    s.DefaultDiskMB,
		TimeoutMs: s.DefaultTimeoutMs,
		Image:     s.DefaultImage,
		Env:       map[string]string{},
		State:     StateIdle,
		CreatedAt: now,
		UpdatedAt: now,
	}
}

// Create validates cfg, makes the sandbox's workspace and stores it.
// Nothing is stored when any field is invalid.
func (e *Engine) Create(ctx context.Context, cfg SandboxConfig) (*Sandbox, error) {
	// A new sandbox takes its defaults from the owner's file as it is now.
	if _, err := e.ownerPolicyFresh(); err != nil {
		return nil, asRefusal(err)
	}
	sb, err := e.newSandboxFor(principal.Of(ctx).Tenant, cfg)
	if err != nil {
		return nil, err
	}
	if sb.Backend == "" {
		// A persistent sandbox keeps the backend it was made with, so that
		// what it keeps (a container) and its rules stay the same. With no
		// isolation available now, it stays on "auto" and its runs are
		// refused until there is.
		if b, _ := e.probes.best(ctx); b != nil {
			sb.Backend = b.Name()
		}
	}
	e.createMu.Lock()
	defer e.createMu.Unlock()
	if err := e.roomForSandbox(); err != nil {
		return nil, err
	}
	if err := e.roomForTenant(sb.Tenant); err != nil {
		return nil, err
	}
	if err := e.takeUID(&sb); err != nil {
		return nil, err
	}
	if err := e.makeWorkspace(&sb); err != nil {
		e.releaseUID(&sb)
		return nil, err
	}
	if err := e.store.PutSandbox(sb.ID, sb); err != nil {
		if sb.OwnWorkspace {
			os.RemoveAll(sb.Workspace)
		}
		e.releaseUID(&sb)
		return nil, fmt.Errorf("saving sandbox: %w", err)
	}
	if remoteSandbox(&sb) {
		// Copies are made now, once: a mount asked for is never dropped.
		if err := e.fillMounts(ctx, &sb, nil); err != nil {
			_ = e.store.DeleteSandbox(sb.ID)
			if b := e.elsewhere(&sb); b != nil {
				_ = b.RemoveSandbox(context.WithoutCancel(ctx), sb.ID)
				_ = b.Purge(context.WithoutCancel(ctx), sb.ID)
			}
			return nil, err
		}
	}
	e.log.Info("Sandbox created.", "id", sb.ID, "name", sb.Name, "backend", sb.Backend, "engine", sb.Engine)
	return &sb, nil
}

// newSandbox validates cfg over the defaults; it stores nothing.
func (e *Engine) newSandbox(cfg SandboxConfig) (Sandbox, error) {
	return e.newSandboxFor("", cfg)
}

// newSandboxFor is newSandbox for a sandbox of tenant.
func (e *Engine) newSandboxFor(tenant string, cfg SandboxConfig) (Sandbox, error) {
	def := e.defaultSandbox()
	def.Tenant = tenant
	tenantDefaults(&def)
	sb, err := e.applyConfig(def, cfg, true)
	if err != nil {
		return sb, err
	}
	sb.ID = randomHex(6)
	if sb.Name == "" {
		sb.Name = "sandbox-" + sb.ID
	}
	if sb.Backend == "auto" {
		sb.Backend = ""
	}
	return sb, nil
}

// makeWorkspace creates the sandbox's own directory under workspaces/,
// owned by the sandbox's own uid when the engine is root (a one-shot of
// the documented off path, which runs as the engine's user, has none:
// its workspace stays the engine's).
func (e *Engine) makeWorkspace(sb *Sandbox) error {
	if sb.Workspace != "" && !sb.OwnWorkspace {
		return nil // a project dir the caller gave (SandboxConfig.ProjectDir)
	}
	dir := filepath.Join(e.workspacesDir(), sb.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("creating the workspace: %w", err)
	}
	if u := e.userOf(sb); u != nil && u.UID != 0 {
		if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
			os.Remove(dir)
			return fmt.Errorf("giving the workspace to the sandbox's uid %d: %w", u.UID, err)
		}
	}
	sb.Workspace, sb.OwnWorkspace = dir, true
	return nil
}

// Get returns the sandbox id, with its live state.
func (e *Engine) Get(id string) (*Sandbox, error) {
	var sb Sandbox
	if err := e.store.GetSandbox(id, &sb); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, &NotFoundError{Kind: "sandbox", ID: id}
		}
		return nil, err
	}
	e.withLiveState(&sb)
	return &sb, nil
}

func (e *Engine) withLiveState(sb *Sandbox) {
	e.withRunState(sb)
	e.withContainerState(sb)
}

// withContainerState sets what sb's backend keeps for it, or, when its
// engine elsewhere does not answer, that it is unreachable: kept, not
// deleted, and adopted again when the engine answers. A link that is
// down is not asked (the engine's watcher knows).
func (e *Engine) withContainerState(sb *Sandbox) {
	if why := e.engineUnreachable(sb); why != "" {
		sb.State, sb.LastError = StateUnreachable, "engine "+sb.Engine+" is unreachable: "+why
		sb.Container = "unknown: engine " + sb.Engine + " is unreachable"
		return
	}
	sb.Container = e.containerStatus(sb)
}

// withRunState sets sb's state from its live runs.
func (e *Engine) withRunState(sb *Sandbox) {
	if e.live.count(sb.ID) > 0 {
		sb.State = StateRunning
	} else if sb.State == StateRunning {
		sb.State = StateIdle
	}
}

// List returns every sandbox, most recently used first.
func (e *Engine) List() ([]Sandbox, error) {
	page, err := e.SandboxesPage(ListQuery{})
	if err != nil || len(page.Sandboxes) == 0 {
		return nil, err
	}
	return page.Sandboxes, nil
}

// Update validates cfg against the sandbox and saves it. The same checks
// as Create apply; on any error nothing changes.
func (e *Engine) Update(id string, cfg SandboxConfig) (*Sandbox, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	if err := ownedByApp(sb, "its sandbox settings are the app's: change them with `senclaw apps sandbox "+strings.TrimPrefix(sb.Name, "app:")+"` or the Space Apps card's Sandbox button"); err != nil {
		return nil, err
	}
	next, err := e.applyConfig(*sb, cfg, false)
	if err != nil {
		return nil, err
	}
	if remoteSandbox(&next) && cfg.Mounts != nil {
		// A copy asked for is made now, before it is saved: a mount
		// that is new (or whose folder changed) is copied once.
		isNew := func(m backends.Mount) bool {
			return !slices.ContainsFunc(sb.Mounts, func(o backends.Mount) bool { return o.Target == m.Target && o.Source == m.Source })
		}
		ctx, cancel := context.WithTimeout(context.Background(), fileOpTimeout)
		err := e.fillMounts(ctx, &next, isNew)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	next.UpdatedAt = e.now().UTC()
	if err := e.store.PutSandbox(id, next); err != nil {
		return nil, fmt.Errorf("saving sandbox: %w", err)
	}
	e.forgetStatus(id)
	e.readyChanged(id) // its next run starts from what was saved
	e.withLiveState(&next)
	return &next, nil
}

// Delete stops the sandbox and removes it. With purge, its workspace is
// removed too, but only when it is our own directory under workspaces/;
// a project directory (the agent shell's) or a forged path is never
// touched. It reports whether files were removed.
func (e *Engine) Delete(ctx context.Context, id string, purge bool) (bool, error) {
	sb, err := e.Get(id)
	if err != nil {
		return false, err
	}
	if err := ownedByApp(sb, "it goes with the app: remove the app with `senclaw apps rm "+strings.TrimPrefix(sb.Name, "app:")+"` or stop it from the Space Apps card"); err != nil {
		return false, err
	}
	return e.deleteSandbox(ctx, sb, purge)
}

// DeleteAppSandbox removes a Space App's sandbox (app/spaceapps, when the
// app is removed); its workspace, the app's directory, stays.
func (e *Engine) DeleteAppSandbox(ctx context.Context, id string) error {
	sb, err := e.Get(id)
	if err != nil {
		return err
	}
	if sb.Kind != KindApp {
		return &ConflictError{Reason: fmt.Sprintf("sandbox %q is not a Space App's", id)}
	}
	_, err = e.deleteSandbox(ctx, sb, false)
	return err
}

// ownedByApp refuses to change a Space App's sandbox from outside its app
// (the supervisor would put it back, or start the app again): why says
// where to change it instead.
func ownedByApp(sb *Sandbox, why string) error {
	if sb.Kind != KindApp {
		return nil
	}
	return &ConflictError{Reason: fmt.Sprintf("sandbox %s is Space App %s's: %s", sb.ID, strings.TrimPrefix(sb.Name, "app:"), why)}
}

func (e *Engine) deleteSandbox(ctx context.Context, sb *Sandbox, purge bool) (bool, error) {
	id := sb.ID
	e.readyChanged(id)
	e.live.killSandbox(id, "sandbox deleted")
	e.live.waitSandbox(id)
	var de *docker.DaemonError
	gone := false // its engine elsewhere does not answer
	if p := e.persistent(sb); p != nil {
		if err := p.RemoveSandbox(ctx, id); err != nil {
			if !remoteSandbox(sb) || !errors.As(err, &de) {
				return false, fmt.Errorf("removing the %s state of the sandbox: %w", sb.Backend, err)
			}
			// The record goes all the same: the engine's reconcile
			// removes the container when it answers again.
			gone = true
			e.log.Warn("A sandbox on an engine that does not answer was deleted; its container goes when the engine answers again, its volumes stay.", "sandbox", id, "engine", sb.Engine)
		}
	}
	if err := e.store.DeleteSandbox(id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	e.forgetNetwork(id)
	// Its uid goes back to the pool (which hands it out again only after
	// every other free one) once nothing of the sandbox is left that it
	// owns: till then (a removal that failed) it stays the deleted
	// sandbox's, and the engine's next start skips a uid that files left
	// in the workspaces dir have.
	if remoteSandbox(sb) {
		// No file on this host has its uid.
		defer e.releaseUID(sb)
		e.forgetRemoteLogs(id)
		// Its files are its volumes there: purged with it, else kept
		// (labelled with its id) for the owner to take.
		if !purge || gone {
			return false, nil
		}
		if b := e.elsewhere(sb); b != nil {
			if err := b.Purge(ctx, id); err != nil {
				return false, fmt.Errorf("removing the sandbox's volumes on engine %s: %w", sb.Engine, err)
			}
		}
		return true, nil
	}
	if !purge {
		// The files stay on disk: out of the workspace's image, if it
		// has one, into its directory, and given to the engine.
		if err := e.releaseDisk(sb, true); err != nil {
			return false, err
		}
		e.keepFiles(sb)
		return false, nil
	}
	// A project's package caches go with its sandbox's files; the
	// project folder itself is the person's, and stays.
	if err := e.removeProjectCaches(sb); err != nil {
		return false, fmt.Errorf("removing the project's package caches: %w", err)
	}
	removed, err := e.purgeWorkspace(sb)
	if err == nil && sb.Kind != "oneshot" { // a one-shot's is let go there
		e.releaseUID(sb)
	}
	return removed, err
}

// keepFiles gives what a deleted sandbox of a root engine leaves on disk
// (its own workspace, the engine's copy of a Space App) to the engine's
// user, then lets its uid go: a sandbox given that uid later owns none
// of it. When they cannot be given, the uid stays the deleted sandbox's.
func (e *Engine) keepFiles(sb *Sandbox) {
	if e.opts.EUID != 0 || sb.UID == 0 {
		return
	}
	if e.enginesFiles(sb) {
		_, _, err := chownTree(sb.Workspace, backends.Credential{UID: sb.UID, GID: sb.GID}, backends.Credential{})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.log.Error("The files a deleted sandbox left could not be given to the engine; its uid goes to no other sandbox until they are.", "sandbox", sb.ID, "workspace", sb.Workspace, "uid", sb.UID, "err", err)
			return
		}
	}
	e.releaseUID(sb)
}

// releaseDisk unmounts and removes the image of sb's own workspace
// (keep: its files move into the directory first), and whatever else is
// mounted over it (a one-shot's tmpfs, a pooled workspace bound there).
func (e *Engine) releaseDisk(sb *Sandbox, keep bool) error {
	if !sb.OwnWorkspace || filepath.Clean(sb.Workspace) != filepath.Join(e.workspacesDir(), sb.ID) {
		return nil
	}
	if sb.Kind == "oneshot" {
		v, mounted := e.mountedOneShots.LoadAndDelete(sb.Workspace)
		if !mounted {
			return nil
		}
		if v.(bool) {
			defer e.tmpfsOneShots.Add(-1)
		}
		return diskquota.Unmount(sb.Workspace)
	}
	if e.opts.Disks != nil {
		if err := e.opts.Disks.Remove(sb.Workspace, keep); err != nil {
			return fmt.Errorf("removing the workspace's disk image: %w", err)
		}
	}
	return diskquota.Unmount(sb.Workspace)
}

// purgeAfter removes a one-shot sandbox's workspace once its run is over,
// in the background: the caller has its answer without waiting for an
// unmount and a directory removal that are no part of the run. Close
// waits for them; once it has begun, they are done at once.
func (e *Engine) purgeAfter(sb *Sandbox, then ...func()) {
	purge := func() {
		_, _ = e.purgeWorkspace(sb)
		for _, f := range then {
			f()
		}
	}
	e.purgeMu.Lock()
	if e.purgesClosed {
		e.purgeMu.Unlock()
		purge()
		return
	}
	e.purges.Add(1)
	e.purgeMu.Unlock()
	go func() {
		defer e.purges.Done()
		purge()
	}()
}

// purgeWorkspace removes a workspace only if it is exactly
// workspaces/<id> of this sandbox. A one-shot's uid goes back once its
// workspace is gone (or it had none).
func (e *Engine) purgeWorkspace(sb *Sandbox) (bool, error) {
	want := filepath.Join(e.workspacesDir(), sb.ID)
	if !sb.OwnWorkspace || filepath.Clean(sb.Workspace) != want || sb.ID == "" || strings.ContainsAny(sb.ID, "/.") {
		if sb.Kind == "oneshot" {
			e.releaseUID(sb)
		}
		return false, nil
	}
	if err := e.releaseDisk(sb, false); err != nil {
		return false, err
	}
	if err := os.RemoveAll(want); err != nil {
		return false, fmt.Errorf("removing the workspace: %w", err)
	}
	if sb.Kind == "oneshot" {
		e.releaseUID(sb)
	}
	return true, nil
}

// ResolveSandbox turns what a person typed, an id or a sandbox's name,
// into the sandbox's id: an id first, else the one sandbox with that name.
// A name two sandboxes share is refused with their ids.
func (e *Engine) ResolveSandbox(idOrName string) (string, error) {
	return e.ResolveSandboxFor(principal.OwnerPrincipal, idOrName)
}

// ResolveSandboxFor is ResolveSandbox among the sandboxes p sees: another
// tenant's id answers as an unknown one would (a *NotFoundError with
// CrossTenant), and its names are not looked at.
func (e *Engine) ResolveSandboxFor(p principal.Principal, idOrName string) (string, error) {
	var sb Sandbox
	err := e.store.GetSandbox(idOrName, &sb)
	if err == nil {
		if !p.Sees(sb.Tenant) {
			return "", &NotFoundError{Kind: "sandbox", ID: idOrName, CrossTenant: true}
		}
		return idOrName, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	var ids []string
	err = e.store.EachSandbox(func(data []byte) error {
		var s struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Tenant string `json:"tenant"`
		}
		if json.Unmarshal(data, &s) == nil && s.Name == idOrName && p.Sees(s.Tenant) {
			ids = append(ids, s.ID)
		}
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) > 1:
		return "", &ConflictError{Reason: fmt.Sprintf("%d sandboxes are named %q (%s): give an id (senclaw ls lists them)", len(ids), idOrName, strings.Join(ids, ", "))}
	}
	return "", &NotFoundError{Kind: "sandbox", ID: idOrName}
}
