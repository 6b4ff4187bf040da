package app

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/secevents"
	"github.com/senclaw/sandbox/backends"
)

// Tenants on one engine (the GoClaw seed's model): every sandbox, run,
// schedule and app records its tenant, and a tenant's sandboxes are
// kept to its own directory, <data>/tenants/<slug>/, whose workspace/
// holds its folders and projects and whose runtime/ what it installs
// (pip --user, npm -g), shared by its sandboxes and no one else's. Its
// mounts, project dirs and app folders lie inside that directory unless
// the owner granted it a path; it never reads the whole disk (open) nor
// runs with no sandbox (direct); its quotas bound its sandboxes, its
// runs at once and its disk; its sandboxes never reach another tenant's
// listen ports through the proxy. The rules follow the sandbox's tenant,
// whoever changes it: the owner grants a tenant paths, not a sandbox.

// TenantDirectory is what the engine needs of the tenants (app/tenants):
// the principal a tenant is now, with its quotas and granted paths, and
// every tenant.
type TenantDirectory interface {
	Principal(slug string) (principal.Principal, bool)
	Principals() []principal.Principal
}

// tenancy is the engine's state of its tenants.
type tenancy struct {
	mu  sync.Mutex
	dir TenantDirectory
	// runs counts each tenant's runs in flight.
	runs map[string]int
	// disk caches each tenant's directory size for diskCacheFor.
	disk map[string]diskUse
}

type diskUse struct {
	mb int
	at time.Time
}

// SetTenants gives the engine its tenants. Until then no tenant is known:
// a sandbox of one is refused its runs.
func (e *Engine) SetTenants(d TenantDirectory) {
	e.tenancy.mu.Lock()
	e.tenancy.dir = d
	e.tenancy.mu.Unlock()
}

// tenant is tenant slug as it is now.
func (e *Engine) tenant(slug string) (principal.Principal, bool) {
	e.tenancy.mu.Lock()
	d := e.tenancy.dir
	e.tenancy.mu.Unlock()
	if d == nil {
		return principal.Principal{}, false
	}
	return d.Principal(slug)
}

// slugRE is what a tenant's slug may be: it names a folder.
var slugRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`) })

// TenantDir is tenant slug's directory.
func (e *Engine) TenantDir(slug string) string {
	return filepath.Join(e.opts.DataDir, "tenants", slug)
}

// tenantRuntime is where tenant slug's installed packages are.
func (e *Engine) tenantRuntime(slug string) string {
	return filepath.Join(e.TenantDir(slug), "runtime")
}

// MakeTenantDir makes tenant slug's directory, with workspace/ and
// runtime/ for its sandboxes to write, and returns it.
func (e *Engine) MakeTenantDir(slug string) (string, error) {
	if !slugRE().MatchString(slug) {
		return "", badField("name", slug, "must be 1 to 63 characters: lowercase letters, digits and . _ - (starting with a letter or digit)")
	}
	root := e.TenantDir(slug)
	for _, d := range []string{filepath.Dir(root), root} {
		// Traversable, not listable: a root engine's sandbox user walks
		// through to its mounts.
		if err := os.Mkdir(d, 0o711); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("creating %s: %w", d, err)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return "", err
		}
	}
	for _, name := range []string{"workspace", "runtime"} {
		// The engine's user's, for it alone (other local users and other
		// tenants never read a tenant's files): a root engine binds them
		// into each of the tenant's sandboxes, every one with a uid of
		// its own, through an idmapped mount (idmapMounts), as it does a
		// project dir.
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o700); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("creating %s: %w", d, err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return "", err
		}
	}
	return root, nil
}

// RemoveTenantDir removes tenant slug's directory and what is in it.
func (e *Engine) RemoveTenantDir(slug string) error {
	if !slugRE().MatchString(slug) {
		return badField("name", slug, "is not a tenant's name")
	}
	return os.RemoveAll(e.TenantDir(slug))
}

// otherTenantDirs are the directories of every tenant but tenant, and
// the paths the owner granted them, canonical: what the shell guard keeps
// from tenant's commands. A path granted to tenant too is its own.
func (e *Engine) otherTenantDirs(tenant string) (others, own []string) {
	e.tenancy.mu.Lock()
	d := e.tenancy.dir
	e.tenancy.mu.Unlock()
	if d == nil {
		return nil, nil
	}
	own = []string{canonical(e.TenantDir(tenant))}
	if t, ok := d.Principal(tenant); ok {
		for _, p := range t.Paths {
			own = append(own, canonical(p))
		}
	}
	for _, t := range d.Principals() {
		if t.Name == tenant {
			continue
		}
		for _, dir := range append([]string{e.TenantDir(t.Name)}, t.Paths...) {
			if c := canonical(dir); !slices.Contains(own, c) && !slices.Contains(others, c) {
				others = append(others, c)
			}
		}
	}
	return others, own
}

// guardFor is the host folder guard for a sandbox of tenant: the
// engine's, with the tenant's own directory given to it (it lies in the
// data dir, which is never given otherwise).
func (e *Engine) guardFor(tenant string) hostDirGuard {
	g := e.guard()
	if tenant != "" {
		g.tenantDir = canonical(e.TenantDir(tenant))
	}
	return g
}

// checkTenantDir is checkHostDir for a sandbox of tenant: the folder must
// also lie inside the tenant's directory or a path the owner granted it.
func (e *Engine) checkTenantDir(field, path, tenant string, writable bool) (string, error) {
	real, err := checkHostDir(field, path, e.guardFor(tenant), writable)
	if err != nil || tenant == "" {
		return real, err
	}
	if within(real, canonical(e.TenantDir(tenant))) {
		return real, nil
	}
	t, _ := e.tenant(tenant)
	for _, p := range t.Paths {
		if within(real, canonical(p)) {
			return real, nil
		}
	}
	return "", badField(field, path, "is outside tenant %s's directory %s: a tenant's mounts, folders and project dirs lie inside it (put the folder under its workspace/), unless the owner grants the tenant that path (senclaw tenants set --path DIR %s)", tenant, e.TenantDir(tenant), tenant)
}

// checkTenantSandbox refuses what a tenant's sandbox may not have: the
// whole disk to read, or no sandbox at all; and clamps its disk quota.
func (e *Engine) checkTenantSandbox(sb *Sandbox) error {
	if sb.Tenant == "" {
		return nil
	}
	if sb.FsMode == backends.FsOpen {
		return badField("fsMode", string(sb.FsMode), "reads this machine's whole disk, which no tenant's sandbox may: use strict or allowlist")
	}
	if sb.Backend == "direct" {
		return badField("backend", sb.Backend, "runs with no isolation, which no tenant's sandbox may: use an isolating backend (or auto)")
	}
	// The engine's secrets are the owner's credentials: a tenant using
	// one would act as the owner on the secret's hosts.
	if len(sb.Secrets) > 0 {
		return badField("secrets", sb.Secrets[0], "is a secret of the owner's, which no tenant's sandbox may use; the owner gives a tenant its own credentials another way")
	}
	ownWorkspace := sb.OwnWorkspace || sb.Workspace == "" // not a project dir (which has no quota of its own)
	if t, ok := e.tenant(sb.Tenant); ok && t.Quota.DiskMB > 0 && ownWorkspace && sb.Kind != KindApp && (sb.DiskMB == 0 || sb.DiskMB > t.Quota.DiskMB) {
		sb.DiskMB = t.Quota.DiskMB
	}
	return nil
}

// tenantDefaults turns the defaults of a new sandbox into a tenant's: a
// default fs mode of open becomes strict.
func tenantDefaults(sb *Sandbox) {
	if sb.Tenant != "" && sb.FsMode == backends.FsOpen {
		sb.FsMode = backends.FsStrict
	}
}

// roomForTenant refuses tenant a new persistent sandbox past its quota.
// createMu is held.
func (e *Engine) roomForTenant(tenant string) error {
	if tenant == "" {
		return nil
	}
	t, ok := e.tenant(tenant)
	if !ok {
		return &NotFoundError{Kind: "tenant", ID: tenant}
	}
	if t.Quota.Sandboxes <= 0 {
		return nil
	}
	n := 0
	err := e.store.EachSandbox(func(data []byte) error {
		var s struct {
			Tenant string `json:"tenant"`
			Kind   string `json:"kind"`
		}
		if json.Unmarshal(data, &s) == nil && s.Tenant == tenant && s.Kind != "oneshot" {
			n++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n >= t.Quota.Sandboxes {
		return &LimitError{Setting: "quota.sandboxes", Reason: fmt.Sprintf("refused: tenant %s holds %d sandboxes, its quota; delete the ones it no longer needs, or the owner raises it (senclaw tenants set --sandboxes N %s)", tenant, n, tenant)}
	}
	return nil
}

// admitTenant holds a place among tenant's runs at once, past its quota
// a refusal; and refuses a run while its directory is past its disk
// quota. release gives the place back.
func (e *Engine) admitTenant(tenant string) (release func(), err error) {
	if tenant == "" {
		return func() {}, nil
	}
	t, ok := e.tenant(tenant)
	if !ok {
		return nil, refused("the sandbox belongs to tenant %s, which this engine does not know (removed?); nothing runs for it", tenant)
	}
	if t.Quota.DiskMB > 0 {
		if mb := e.tenantDiskMB(tenant); mb >= t.Quota.DiskMB {
			return nil, runLimit("quota.diskMb", "tenant %s's directory holds %d MB, its disk quota is %d MB; remove files from %s, or the owner raises it (senclaw tenants set --disk MB %s)", tenant, mb, t.Quota.DiskMB, e.TenantDir(tenant), tenant)
		}
	}
	e.tenancy.mu.Lock()
	defer e.tenancy.mu.Unlock()
	if e.tenancy.runs == nil {
		e.tenancy.runs = map[string]int{}
	}
	if n := e.tenancy.runs[tenant]; t.Quota.Runs > 0 && n >= t.Quota.Runs {
		return nil, runLimit("quota.runs", "tenant %s has %d runs going, its quota of runs at once; wait for one to end, or the owner raises it (senclaw tenants set --runs N %s)", tenant, n, tenant)
	}
	e.tenancy.runs[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			e.tenancy.mu.Lock()
			e.tenancy.runs[tenant]--
			e.tenancy.mu.Unlock()
		})
	}, nil
}

// diskCacheFor is how long a tenant directory's size is reused.
const diskCacheFor = 10 * time.Second

// tenantDiskMB is the size of tenant's directory in MB, walked at most
// every diskCacheFor.
func (e *Engine) tenantDiskMB(tenant string) int {
	e.tenancy.mu.Lock()
	if u, ok := e.tenancy.disk[tenant]; ok && e.now().Sub(u.at) < diskCacheFor {
		e.tenancy.mu.Unlock()
		return u.mb
	}
	e.tenancy.mu.Unlock()
	var total int64
	_ = filepath.WalkDir(e.TenantDir(tenant), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return nil
	})
	mb := int(total >> 20)
	e.tenancy.mu.Lock()
	if e.tenancy.disk == nil {
		e.tenancy.disk = map[string]diskUse{}
	}
	e.tenancy.disk[tenant] = diskUse{mb: mb, at: e.now()}
	e.tenancy.mu.Unlock()
	return mb
}

// runtimeTarget is where a tenant's runtime/ appears in its sandboxes'
// workspaces.
const runtimeTarget = ".runtime"

// tenantMounts are the mounts a tenant's sandbox gets besides its own:
// the tenant's runtime/, where what it installs goes. A traced run goes
// without it: a root engine binds it through an idmapped mount, which a
// trace cannot follow, and the runtime is for the tenant's sandboxes
// alone to read (0700), so it cannot be bound read-only either.
func (e *Engine) tenantMounts(sb *Sandbox, traced bool) []backends.Mount {
	if sb.Tenant == "" || traced {
		return nil
	}
	return []backends.Mount{{Source: e.tenantRuntime(sb.Tenant), Target: runtimeTarget}}
}

// tenantReadPaths are the allowlist entries a sandbox of tenant reads:
// the owner's allowlist is every sandbox's, but a tenant reads only what
// lies in its own directory or a path the owner granted it.
func (e *Engine) tenantReadPaths(tenant string, allow []string) []string {
	if tenant == "" {
		return allow
	}
	own := []string{canonical(e.TenantDir(tenant))}
	if t, ok := e.tenant(tenant); ok {
		for _, p := range t.Paths {
			own = append(own, canonical(p))
		}
	}
	var out []string
	for _, a := range allow {
		for _, o := range own {
			if within(canonical(a), o) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// tenantEnv points what a tenant's sandbox installs at its runtime/:
// pip --user (PYTHONUSERBASE), npm -g (its prefix), and their programs
// first on PATH.
func tenantEnv(sb *Sandbox, vars map[string]string) {
	if sb.Tenant == "" {
		return
	}
	rt := filepath.Join(sb.Workspace, runtimeTarget)
	vars["PYTHONUSERBASE"] = filepath.Join(rt, "python")
	vars["NPM_CONFIG_PREFIX"] = filepath.Join(rt, "npm")
	vars["NODE_PATH"] = filepath.Join(rt, "npm", "lib", "node_modules")
	vars["PATH"] = filepath.Join(rt, "python", "bin") + ":" + filepath.Join(rt, "npm", "bin") + ":" + vars["PATH"]
}

// ListenTenant is the tenant of the sandbox that listens on port of this
// machine (its listen rules), for the proxy: no sandbox reaches another
// tenant's listen ports.
func (e *Engine) listenTenant(port int) (string, bool) {
	var tenant string
	found := false
	_ = e.store.EachSandbox(func(data []byte) error {
		if found {
			return nil
		}
		var s struct {
			Tenant string             `json:"tenant"`
			Ports  backends.PortRules `json:"ports"`
		}
		if json.Unmarshal(data, &s) == nil && slices.Contains(s.Ports.Listen, port) {
			tenant, found = s.Tenant, true
		}
		return nil
	})
	if found {
		return tenant, true
	}
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	for _, r := range e.net.oneShots {
		if slices.Contains(r.Ports.Listen, port) {
			return r.Tenant, true
		}
	}
	return "", false
}

// crossTenantPort records a connection the proxy refused because sandbox
// id asked for another tenant's listen port.
func (e *Engine) crossTenantPort(id string, port int) {
	r, _ := e.netRules(id)
	who := principal.Principal{Kind: principal.Tenant, Name: r.Tenant, Tenant: r.Tenant}
	if r.Tenant == "" {
		who = principal.OwnerPrincipal
	}
	e.security.Record(secevents.Event{
		Kind: "security.cross_tenant_denied", Principal: who.Label(), Tenant: r.Tenant, Source: "proxy",
		Request: fmt.Sprintf("connect 127.0.0.1:%d from sandbox %s", port, id),
		Reason:  fmt.Sprintf("port %d is a listen port of another tenant's sandbox", port),
	})
}
