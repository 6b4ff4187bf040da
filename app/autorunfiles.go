package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app/autorun"
	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
)

// Bounds of the walk for projects nested in a person's folder
// (autorun.Nested): the settings nestedProjectDepth and
// nestedProjectLimit.
const (
	DefaultNestedProjectDepth = 4
	MaxNestedProjectDepth     = 16
	DefaultNestedProjectLimit = 64
	MaxNestedProjectLimit     = 4096
)

// personsFolders are the folders of the person's that sb's runs may
// write: its workspace when it is not the engine's own (an agent's
// project, a --here folder, the folder a Space App runs in place from)
// and its read-write mounts. What programs on this machine run code from
// in them is kept read-only for the sandbox (app/autorun). What lies in
// the engine's data dir (a Space App's copy) is no one else's.
func (e *Engine) personsFolders(sb *Sandbox) []string {
	if remoteSandbox(sb) {
		// On another machine: its workspace is a path in its container,
		// its mounts are copies; nothing of this machine is written.
		return nil
	}
	var out []string
	add := func(dir string) {
		if !within(dir, e.opts.DataDir) && !within(dir, canonical(e.opts.DataDir)) && !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	if !sb.OwnWorkspace {
		add(sb.Workspace)
	}
	for _, m := range sb.Mounts {
		if !m.ReadOnly {
			add(m.Source)
		}
	}
	return out
}

// protectAutorun finds what must stay read-only in the person's folders
// that the run may write and puts it in spec.Protected. For bwrap, which
// mounts per run, an empty directory stands for a missing one during the
// run (the returned release removes it after the last run that needs it
// ends); for the other backends a missing one is named in the run's
// note. A folder holding what cannot be kept read-only (a symbolic link
// at one of the names) refuses the run. The documented off path and the
// direct backend, which confine nothing, are left alone.
func (e *Engine) protectAutorun(p *plan, backend string, spec *backends.Spec) (release func(), missing string, err error) {
	release = func() {}
	if p.offPath || backend == "direct" {
		return release, "", nil
	}
	folders := e.personsFolders(p.sb)
	user := spec.User
	held := map[string][]string{} // folder -> placeholders held in it
	release = func() {
		for folder, rels := range held {
			_ = e.inFolder(e.folderUser(user, folder, idmappedFolders(spec)), folder, func(d *jailfs.Dir) error {
				for _, rel := range rels {
					e.placeholders.Release(d, folder, rel)
				}
				return nil
			})
		}
	}
	var notMade []string
	for _, folder := range folders {
		err := e.inFolder(e.folderUser(user, folder, idmappedFolders(spec)), folder, func(d *jailfs.Dir) error {
			entries, elsewhere, _, err := e.findAutorun(d, folder)
			if err != nil {
				return err
			}
			for _, x := range elsewhere {
				if w := writableFolder(folders, x); w != "" {
					return &autorun.RefusedError{Rel: x, Reason: fmt.Sprintf("is where a repository of %s keeps what git runs, and this sandbox may write it (it lies in %s): git on this machine could be made to run anything; keep that folder out of the sandbox's read-write mounts", folder, w)}
				}
			}
			for _, en := range entries {
				host := filepath.Join(folder, en.Rel)
				switch {
				case !en.Missing:
				case backend == "seatbelt":
					// Its path rules hold whether the file exists or not.
				case backend == "bwrap" && en.Dir:
					err := e.placeholders.Hold(d, folder, en.Rel)
					if errors.Is(err, autorun.ErrNotWritable) {
						continue // the sandbox may not make it either
					}
					if err != nil {
						return err
					}
					held[folder] = append(held[folder], en.Rel)
				default:
					notMade = append(notMade, host)
					continue
				}
				spec.Protected = append(spec.Protected, host)
			}
			return nil
		})
		if err != nil {
			release()
			var re *autorun.RefusedError
			if errors.As(err, &re) {
				return func() {}, "", refused("%s in %s %s; nothing ran", re.Rel, folder, re.Reason)
			}
			return func() {}, "", fmt.Errorf("checking what programs run from in %s: %w", folder, err)
		}
	}
	if len(notMade) > 0 {
		const shown = 10
		names := strings.Join(notMade, ", ")
		if len(notMade) > shown {
			// Nested projects can make it a long list.
			names = fmt.Sprintf("%s and %d more", strings.Join(notMade[:shown], ", "), len(notMade)-shown)
		}
		missing = fmt.Sprintf("agents' and git's files: %s do not exist and, on %s, are not kept from being made; a program on this machine would run code from them once made", names, backend)
	}
	return release, missing, nil
}

// findAutorun is what must stay read-only in the person's folder d (at
// folder) and in the projects nested in it (autorun.Nested, bounded by
// the settings), and those projects. An error is an
// autorun.RefusedError (past nestedProjectLimit, a link at one of the
// names, ...) or a failure to read; projects are those found even then.
func (e *Engine) findAutorun(d *jailfs.Dir, folder string) (entries []autorun.Entry, elsewhere, projects []string, err error) {
	s := e.Settings()
	projects, _, err = autorun.Nested(d, s.NestedProjectDepth, s.NestedProjectLimit)
	if err != nil {
		return nil, nil, projects, err
	}
	entries, elsewhere, err = autorun.FindNested(d, folder, projects)
	return entries, elsewhere, projects, err
}

// writableFolder is the folder of folders that p lies in ("" for none).
func writableFolder(folders []string, p string) string {
	for _, f := range folders {
		if p == f || strings.HasPrefix(p, f+"/") {
			return f
		}
	}
	return ""
}

// idmappedFolders are spec's mounts, with its workspace as one more, a
// read-write one, when it is bound through an idmapped mount.
func idmappedFolders(spec *backends.Spec) []backends.Mount {
	if !spec.WorkspaceIDMap {
		return spec.Mounts
	}
	return append(slices.Clone(spec.Mounts), backends.Mount{Source: spec.Workspace, IDMap: true})
}

// folderUser is who the run's sandbox is in the person's folder: the
// sandbox user, or, in a read-write mount bound through an idmapped
// mount, the folder's owner, whom the mount maps it to there (what it
// may make there, it may make as that owner); nil, the engine itself,
// for a folder of root's, which jailfs.As does not act as (the engine
// then sees, and stands in for, more than the sandbox could: never
// less).
func (e *Engine) folderUser(user *backends.Credential, folder string, mounts []backends.Mount) *backends.Credential {
	for _, m := range mounts {
		if !m.IDMap || m.ReadOnly || m.Source != folder || user == nil {
			continue
		}
		owner, err := mappingOf(folder, user)
		if err != nil || owner.OwnerUID == 0 || owner.OwnerGID == 0 {
			return nil
		}
		return &backends.Credential{UID: owner.OwnerUID, GID: owner.OwnerGID}
	}
	return user
}

// inFolder runs fn in the folder (a stored, canonical path) opened
// without following a link on its way, as user (a sandbox's: userOf;
// nil: the engine itself).
func (e *Engine) inFolder(user *backends.Credential, folder string, fn func(d *jailfs.Dir) error) error {
	d, err := jailfs.OpenDir(folder)
	if err != nil {
		if errors.Is(err, jailfs.ErrLink) {
			return refused("%s now goes through a symbolic link (one was put in its path since it was checked); nothing ran. Remove the link, or give the folder again", folder)
		}
		return err
	}
	defer d.Close()
	return jailfs.As(user, func() error { return fn(d) })
}

// sweepPlaceholders removes, before any run, the empty directories that
// runs of an engine that stopped left in the person's folders.
func (e *Engine) sweepPlaceholders() {
	_ = e.store.EachSandbox(func(data []byte) error {
		var sb Sandbox
		if err := json.Unmarshal(data, &sb); err != nil {
			return nil
		}
		s := e.Settings()
		// Placeholders are bwrap's, made as folderUser in the mounts as
		// bwrap binds them.
		user := e.userOf(&sb)
		mounts, err := e.idmapMounts(sb.Mounts, user, "bwrap")
		if err != nil {
			mounts = sb.Mounts
		}
		if ws, err := e.idmapWorkspace(&sb, user, "bwrap"); err == nil && ws {
			mounts = append(mounts, backends.Mount{Source: sb.Workspace, IDMap: true})
		}
		for _, f := range e.personsFolders(&sb) {
			_ = e.inFolder(e.folderUser(user, f, mounts), f, func(d *jailfs.Dir) error {
				projects, _, _ := autorun.Nested(d, s.NestedProjectDepth, s.NestedProjectLimit)
				autorun.Sweep(d, projects...)
				return nil
			})
		}
		return nil
	})
}

// autorunWrite refuses a file API write, removal or mkdir of what
// programs on this machine run code from in a person's folder (root):
// the sandbox itself may not change those.
func (e *Engine) autorunWrite(sb *Sandbox, j jailed) error {
	if !slices.Contains(e.personsFolders(sb), j.root) {
		return nil
	}
	var entries []autorun.Entry
	var projects []string
	err := e.inFolder(e.userOf(sb), j.root, func(d *jailfs.Dir) error {
		var err error
		entries, _, projects, err = e.findAutorun(d, j.root)
		var re *autorun.RefusedError
		if errors.As(err, &re) {
			if re.Bound {
				// Past the limit no run may start, and the projects
				// not counted are not known: nothing is written.
				return badField("path", j.rel, "lies in %s, where %s %s; the file API writes nothing there", j.root, re.Rel, re.Reason)
			}
			err = nil // the fixed names still count
		}
		return err
	})
	if err != nil {
		return err
	}
	if autorun.Covers(entries, j.name, projects...) {
		return badField("path", j.rel, "is read-only for sandboxes: programs on this machine (agents, git, editors) run code from it, so a sandbox may read it but not change it; change it on the host yourself")
	}
	return nil
}
