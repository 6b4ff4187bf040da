// Package tenants keeps the tenants: named principals with a directory, quotas and a tool policy of their own.
//
// A tenant (a teammate's agent on a shared box, a scheduled job, a
// customer's bot) acts through its tokens on its own sandboxes, runs,
// schedules and apps, which no other tenant sees; its directory
// <data>/tenants/<slug>/ holds its folders (workspace/) and what it
// installs (runtime/), and its mounts stay inside it unless the owner
// grants it a path; its quotas bound its sandboxes, its runs at once and
// its disk; its tool policy names the tools it may call. The owner (the
// master tenant) sees every tenant's objects. The engine enforces all of
// it (app/tenancy.go); this package keeps the tenants' documents and
// hands the engine and the tokens each tenant as a principal.
package tenants

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/app/tokens"
)

// Tenant is one tenant; View is one as the faces show it, with its
// directory and how many tokens it has; Added is a new one with its first
// token. They are apitype's.
type (
	Tenant = apitype.Tenant
	View   = apitype.TenantView
	Added  = apitype.TenantAdded
)

// Spec is what the owner gives on add and set; nil fields are not given
// (the defaults on add, unchanged on set).
type Spec struct {
	Quota *principal.Quota `json:"quota,omitempty"`
	// Tools replaces the tool policy; a JSON null (AllTools) removes it.
	Tools    *[]string `json:"tools,omitempty"`
	AllTools bool      `json:"-"`
	Paths    *[]string `json:"paths,omitempty"`
}

// DefaultQuota is a new tenant's quota when none is given.
var DefaultQuota = principal.DefaultTenantQuota

// Options configure a Directory.
type Options struct {
	Engine *app.Engine
	Docs   store.Docs
	Tokens *tokens.Registry
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Directory holds the tenants.
type Directory struct {
	opts Options
	mu   sync.Mutex
	all  map[string]*Tenant
}

// MaxTenants bounds the tenants an engine holds.
const MaxTenants = 500

// New loads the tenants and gives them to the engine and the tokens.
func New(opts Options) (*Directory, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &Directory{opts: opts, all: map[string]*Tenant{}}
	err := opts.Docs.Each(func(data []byte) error {
		var t Tenant
		if err := json.Unmarshal(data, &t); err != nil {
			return fmt.Errorf("reading a tenant: %w", err)
		}
		d.all[t.Name] = &t
		return nil
	})
	if err != nil {
		return nil, err
	}
	opts.Engine.SetTenants(d)
	opts.Tokens.SetTenants(d)
	return d, nil
}

// Principal is tenant slug as a principal: its quotas, tool policy and
// granted paths (tokens.Tenants, app.TenantDirectory).
func (d *Directory) Principal(slug string) (principal.Principal, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.all[slug]
	if !ok {
		return principal.Principal{}, false
	}
	return principal.Principal{Kind: principal.Tenant, Name: t.Name, Tenant: t.Name, Tools: slices.Clone(t.Tools), Quota: t.Quota, Paths: slices.Clone(t.Paths)}, true
}

// Principals are every tenant as a principal, by name
// (app.TenantDirectory).
func (d *Directory) Principals() []principal.Principal {
	var out []principal.Principal
	for _, v := range d.List() {
		if p, ok := d.Principal(v.Name); ok {
			out = append(out, p)
		}
	}
	return out
}

// Add makes tenant name: its directory, its document and its first
// token (named as the tenant), whose secret is returned once. A new
// tenant gets DefaultQuota and principal.DefaultTenantTools unless spec
// says otherwise.
func (d *Directory) Add(name string, spec Spec) (*Added, error) {
	if err := tokens.CheckName("name", name); err != nil {
		return nil, err
	}
	now := d.opts.Now().UTC()
	t := &Tenant{Name: name, Quota: DefaultQuota, Tools: slices.Clone(principal.DefaultTenantTools), Paths: []string{}, CreatedAt: now, UpdatedAt: now}
	if err := d.apply(t, spec); err != nil {
		return nil, err
	}
	d.mu.Lock()
	if _, ok := d.all[name]; ok {
		d.mu.Unlock()
		return nil, &app.ConflictError{Reason: fmt.Sprintf("a tenant named %q exists (senclaw tenants ls)", name)}
	}
	if len(d.all) >= MaxTenants {
		d.mu.Unlock()
		return nil, &app.LimitError{Reason: fmt.Sprintf("refused: the engine holds %d tenants, the most it allows", len(d.all))}
	}
	dir, err := d.opts.Engine.MakeTenantDir(name)
	if err == nil {
		err = d.opts.Docs.Put(name, t)
	}
	if err != nil {
		d.mu.Unlock()
		return nil, fmt.Errorf("making tenant %s: %w", name, err)
	}
	d.all[name] = t
	cp := *t
	d.mu.Unlock()
	// The tokens ask the tenants (d.mu) under their own lock: never call
	// them with d.mu held.
	iss, err := d.opts.Tokens.Add(name, principal.Tenant, name, nil)
	if err != nil {
		// A token of the name exists (an agent's): the tenant is made
		// without its own, and the error says so.
		return nil, fmt.Errorf("tenant %s was made, but its token could not be: %w (give it one with senclaw tokens add NAME --tenant %s)", name, err, name)
	}
	d.opts.Logger.Info("A tenant was made.", "tenant", name, "dir", dir)
	return &Added{Tenant: d.view(cp), Token: iss}, nil
}

// apply checks spec onto t.
func (d *Directory) apply(t *Tenant, spec Spec) error {
	if spec.Quota != nil {
		q := *spec.Quota
		for _, f := range []struct {
			name    string
			v, high int
		}{{"quota.sandboxes", q.Sandboxes, app.MaxSandboxesLimit}, {"quota.runs", q.Runs, app.MaxConcurrencyLimit}, {"quota.diskMb", q.DiskMB, 1 << 20}} {
			if f.v < 0 || f.v > f.high {
				return &app.FieldError{Field: f.name, Value: f.v, Reason: fmt.Sprintf("must be a whole number from 0 (no bound) to %d", f.high)}
			}
		}
		t.Quota = q
	}
	switch {
	case spec.AllTools:
		t.Tools = nil
	case spec.Tools != nil:
		tools, err := principal.CheckTools(*spec.Tools)
		if err != nil {
			return &app.FieldError{Field: "tools", Reason: err.Error()}
		}
		t.Tools = tools
	}
	if spec.Paths != nil {
		paths := []string{}
		for i, p := range *spec.Paths {
			// The owner grants it, but the guard still applies: never the
			// engine's dirs, a secret folder or a system tree.
			real, err := d.opts.Engine.CheckHostDir(fmt.Sprintf("paths[%d]", i), p, "", true)
			if err != nil {
				return err
			}
			if !slices.Contains(paths, real) {
				paths = append(paths, real)
			}
		}
		t.Paths = paths
	}
	return nil
}

// Set changes tenant slug's quota, tool policy or paths.
func (d *Directory) Set(slug string, spec Spec) (View, error) {
	d.mu.Lock()
	old, ok := d.all[slug]
	if !ok {
		d.mu.Unlock()
		return View{}, &app.NotFoundError{Kind: "tenant", ID: slug}
	}
	next := *old
	d.mu.Unlock()
	if err := d.apply(&next, spec); err != nil {
		return View{}, err
	}
	next.UpdatedAt = d.opts.Now().UTC()
	d.mu.Lock()
	if _, ok := d.all[slug]; !ok {
		d.mu.Unlock()
		return View{}, &app.NotFoundError{Kind: "tenant", ID: slug}
	}
	if err := d.opts.Docs.Put(slug, &next); err != nil {
		d.mu.Unlock()
		return View{}, fmt.Errorf("saving the tenant: %w", err)
	}
	d.all[slug] = &next
	d.mu.Unlock()
	return d.view(next), nil
}

// Get returns tenant slug.
func (d *Directory) Get(slug string) (View, error) {
	d.mu.Lock()
	t, ok := d.all[slug]
	var cp Tenant
	if ok {
		cp = *t
	}
	d.mu.Unlock()
	if !ok {
		return View{}, &app.NotFoundError{Kind: "tenant", ID: slug}
	}
	return d.view(cp), nil
}

// List returns every tenant, by name.
func (d *Directory) List() []View {
	d.mu.Lock()
	all := make([]Tenant, 0, len(d.all))
	for _, t := range d.all {
		all = append(all, *t)
	}
	d.mu.Unlock()
	out := make([]View, 0, len(all))
	for _, t := range all {
		out = append(out, d.view(t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Remove removes tenant slug and its tokens, which stop working at once;
// with purge its directory too. What it made (sandboxes, runs,
// schedules, apps) stays, the owner's to see and remove, and runs no
// more: nothing runs for a tenant the engine does not know.
func (d *Directory) Remove(slug string, purge bool) (View, error) {
	d.mu.Lock()
	t, ok := d.all[slug]
	if !ok {
		d.mu.Unlock()
		return View{}, &app.NotFoundError{Kind: "tenant", ID: slug}
	}
	cp := *t
	if err := d.opts.Docs.Delete(slug); err != nil {
		d.mu.Unlock()
		return View{}, fmt.Errorf("removing the tenant: %w", err)
	}
	delete(d.all, slug)
	d.mu.Unlock()
	v := d.view(cp)
	d.opts.Tokens.RemoveTenant(slug)
	if purge {
		if err := d.opts.Engine.RemoveTenantDir(slug); err != nil {
			return v, fmt.Errorf("tenant %s was removed, but not its directory %s: %w", slug, v.Dir, err)
		}
	}
	d.opts.Logger.Info("A tenant was removed.", "tenant", slug, "purged", purge)
	return v, nil
}

// view is t as the faces show it. d.mu is not held (the tokens are
// asked).
func (d *Directory) view(t Tenant) View {
	n := 0
	for _, tok := range d.opts.Tokens.List() {
		if tok.Tenant == t.Name {
			n++
		}
	}
	cp := t
	cp.Tools, cp.Paths = slices.Clone(t.Tools), slices.Clone(t.Paths)
	if cp.Paths == nil {
		cp.Paths = []string{}
	}
	return View{Tenant: cp, Dir: d.opts.Engine.TenantDir(t.Name), Tokens: n}
}
