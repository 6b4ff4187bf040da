package app

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/app/pkgcache"
	"github.com/senclaw/sandbox/backends"
)

// Package caches that last (app/pkgcache): a persistent sandbox keeps
// them at the usual places in its own workspace, which its disk quota
// holds and rm --purge removes; a project (the agent shell's, run
// --here's) in <data dir>/caches, one folder per project folder, bound
// into its bwrap runs at pkgcache.Root. One-shots, Space Apps and the
// documented off paths get none of the engine's.

// cachesDir is where the projects' caches are.
func (e *Engine) cachesDir() string { return filepath.Join(e.opts.DataDir, "caches") }

// cacheStore is the projects' caches.
func (e *Engine) cacheStore() pkgcache.Store { return pkgcache.Store{Dir: e.cachesDir()} }

// cacheKind says which caches sb has: "sandbox" (in its workspace),
// "project" (in the engine's caches), or "".
func cacheKind(sb *Sandbox) string {
	switch {
	case sb.Kind == KindApp || sb.Workspace == "":
		return ""
	case sb.Engine != "" && sb.Kind == "":
		// On another machine: its workspace there is its own.
		return "sandbox"
	case sb.Engine != "":
		return ""
	case !sb.OwnWorkspace:
		return "project"
	case sb.Kind == "":
		return "sandbox"
	}
	return ""
}

// packageCaches gives the run its caches: the variables that point the
// package managers at them (the run's own env wins) and, for a project,
// the bind; it returns the record's line about them ("" for none).
func (e *Engine) packageCaches(p *plan, backend string, spec *backends.Spec) string {
	if p.offPath {
		return ""
	}
	var env map[string]string
	line := ""
	switch cacheKind(p.sb) {
	case "sandbox":
		env = pkgcache.HomeEnv(p.sb.Workspace)
		line = "package caches: the sandbox's own, at the usual places in its workspace (" + strings.Join(homePlaces(), ", ") + "), counted in its disk quota"
	case "project":
		bind, why := e.projectCache(p, backend, spec.User)
		if why != "" {
			return "package caches: not kept for this run (" + why + ")"
		}
		spec.Caches = append(spec.Caches, bind)
		env = pkgcache.Env(pkgcache.Root)
		line = fmt.Sprintf("package caches: the project's own, kept in %s and bound at %s (none of another project's; a project has no disk quota)", bind.Source, pkgcache.Root)
	default:
		return ""
	}
	have := map[string]bool{}
	for _, kv := range spec.Env {
		k, _, _ := strings.Cut(kv, "=")
		have[k] = true
	}
	for k, v := range env {
		if !have[k] {
			spec.Env = append(spec.Env, k+"="+v)
		}
	}
	slices.Sort(spec.Env)
	return line
}

// homePlaces lists the usual places, for the record.
func homePlaces() []string {
	var out []string
	for _, t := range pkgcache.Tools {
		out = append(out, "~/"+t.Home)
	}
	return out
}

// projectCache makes the project's caches and says how they are bound
// for user's run; why says why they are not.
func (e *Engine) projectCache(p *plan, backend string, user *backends.Credential) (backends.Mount, string) {
	if backend != "bwrap" {
		return backends.Mount{}, "the " + backend + " backend has no private /tmp to bind them in; bwrap has"
	}
	dir, err := e.cacheStore().Ensure(pkgcache.ProjectKey(p.sb.Workspace), pkgcache.Owner{Project: p.sb.Workspace})
	if err != nil {
		return backends.Mount{}, err.Error()
	}
	m := backends.Mount{Source: dir, Target: pkgcache.Root}
	if user == nil {
		return m, ""
	}
	// A root engine's caches are its own, and each run's uid may be
	// another (a one-shot of run --here has one of its own): they are
	// bound through an idmapped mount, in which the engine is the run's
	// user.
	switch err := jailfs.CanWrite(user, dir); {
	case err == nil:
		return m, ""
	case !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EPERM):
		return backends.Mount{}, err.Error()
	}
	if p.sb.TraceEnabled || p.req.Trace {
		return backends.Mount{}, "a traced run of a root engine binds no idmapped mount"
	}
	if why := e.noIDMap(backend); why != "" {
		return backends.Mount{}, why
	}
	mapping, err := mappingOf(dir, user)
	if err == nil {
		err = e.idmapCheck(dir, mapping)
	}
	if err != nil {
		return backends.Mount{}, "no idmapped mount of them can be made: " + err.Error()
	}
	m.IDMap = true
	return m, ""
}

// Caches lists the package caches there are: each project's, and each
// persistent sandbox's that has any.
func (e *Engine) Caches() ([]CacheInfo, error) {
	projects, err := e.cacheStore().List()
	if err != nil {
		return nil, err
	}
	all, err := e.List()
	if err != nil {
		return nil, err
	}
	out := []CacheInfo{}
	for _, c := range projects {
		info := CacheInfo{Kind: "project", Project: c.Project, Dir: c.Dir, Bytes: c.Bytes, Files: c.Files}
		for _, sb := range all {
			if cacheKind(&sb) == "project" && sb.Workspace == c.Project {
				info.SandboxID = sb.ID
				break
			}
		}
		out = append(out, info)
	}
	for _, sb := range all {
		if cacheKind(&sb) != "sandbox" {
			continue
		}
		var bytes, files int64
		_ = e.inHomeCaches(&sb, func(name string, d *jailfs.Dir) error {
			f, err := d.Open(name, pkgcache.OpenDirFlags, 0)
			if err != nil {
				return nil
			}
			defer f.Close()
			b, n := pkgcache.Usage(f)
			bytes, files = bytes+b, files+n
			return nil
		})
		if files > 0 {
			out = append(out, CacheInfo{Kind: "sandbox", SandboxID: sb.ID, Dir: sb.Workspace, Bytes: bytes, Files: files})
		}
	}
	return out, nil
}

// ClearCaches empties the package caches of sandbox id (its project's,
// for a sandbox whose workspace is a project), or with id "" every one
// there is. Runs going on keep their (now empty) caches.
func (e *Engine) ClearCaches(id string) error {
	if id == "" {
		projects, err := e.cacheStore().List()
		if err != nil {
			return err
		}
		for _, c := range projects {
			if err := e.cacheStore().Clear(c.Key); err != nil {
				return fmt.Errorf("clearing the caches of %s: %w", c.Project, err)
			}
		}
		all, err := e.List()
		if err != nil {
			return err
		}
		for i := range all {
			if err := e.clearCaches(&all[i]); err != nil {
				return err
			}
		}
		return nil
	}
	sb, err := e.Get(id)
	if err != nil {
		return err
	}
	if cacheKind(sb) == "" {
		return badField("id", id, "is a sandbox without package caches of its own (a one-shot's or a Space App's)")
	}
	return e.clearCaches(sb)
}

// clearCaches empties sb's caches.
func (e *Engine) clearCaches(sb *Sandbox) error {
	switch cacheKind(sb) {
	case "project":
		if err := e.cacheStore().Clear(pkgcache.ProjectKey(sb.Workspace)); err != nil {
			return fmt.Errorf("clearing the caches of %s: %w", sb.Workspace, err)
		}
	case "sandbox":
		err := e.inHomeCaches(sb, func(name string, d *jailfs.Dir) error {
			// Emptied first by descriptor, which makes the read-only
			// folders of Go's module cache writable for their owner.
			if f, err := d.Open(name, pkgcache.OpenDirFlags, 0); err == nil {
				err = pkgcache.Empty(f)
				f.Close()
				if err != nil {
					return err
				}
			}
			return d.RemoveAll(name)
		})
		if err != nil {
			return fmt.Errorf("clearing the caches of sandbox %s: %w", sb.ID, err)
		}
	}
	return nil
}

// inHomeCaches calls fn, as the sandbox's user and by descriptor (the
// workspace is the sandbox's to change), with each cache folder's name in
// sb's workspace that is there.
func (e *Engine) inHomeCaches(sb *Sandbox, fn func(name string, d *jailfs.Dir) error) error {
	return e.inWorkspace(sb, func(d *jailfs.Dir) error {
		var errs []error
		for _, t := range pkgcache.Tools {
			if fi, err := d.Lstat(t.Home); err != nil || !fi.Mode.IsDir() {
				continue
			}
			errs = append(errs, fn(t.Home, d))
		}
		return errors.Join(errs...)
	})
}

// removeProjectCaches removes whole the caches of sb's project, when sb
// is the project's sandbox and goes with its files (rm --purge).
func (e *Engine) removeProjectCaches(sb *Sandbox) error {
	if cacheKind(sb) != "project" || sb.Kind == "oneshot" {
		return nil
	}
	return e.cacheStore().Remove(pkgcache.ProjectKey(sb.Workspace))
}
