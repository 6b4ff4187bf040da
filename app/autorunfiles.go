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

// personsFolders are the folders of the person's that sb's runs may
// write: its workspace when it is not the engine's own (an agent's
// project, a --here folder, the folder a Space App runs in place from)
// and its read-write mounts. What programs on this machine run code from
// in them is kept read-only for the sandbox (app/autorun). What lies in
// the engine's data dir (a Space App's copy) is no one else's.
func (e *Engine) personsFolders(sb *Sandbox) []string {
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
	held := map[string][]string{} // folder -> placeholders held in it
	release = func() {
		for folder, rels := range held {
			_ = e.inFolder(folder, func(d *jailfs.Dir) error {
				for _, rel := range rels {
					e.placeholders.Release(d, folder, rel)
				}
				return nil
			})
		}
	}
	var notMade []string
	for _, folder := range folders {
		err := e.inFolder(folder, func(d *jailfs.Dir) error {
			entries, elsewhere, err := autorun.Find(d, folder)
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
		missing = fmt.Sprintf("agents' and git's files: %s do not exist and, on %s, are not kept from being made; a program on this machine would run code from them once made", strings.Join(notMade, ", "), backend)
	}
	return release, missing, nil
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

// inFolder runs fn in the folder (a stored, canonical path) opened
// without following a link on its way, as the sandbox user.
func (e *Engine) inFolder(folder string, fn func(d *jailfs.Dir) error) error {
	d, err := jailfs.OpenDir(folder)
	if err != nil {
		if errors.Is(err, jailfs.ErrLink) {
			return refused("%s now goes through a symbolic link (one was put in its path since it was checked); nothing ran. Remove the link, or give the folder again", folder)
		}
		return err
	}
	defer d.Close()
	return jailfs.As(e.sandboxUser(), func() error { return fn(d) })
}

// sweepPlaceholders removes, before any run, the empty directories that
// runs of an engine that stopped left in the person's folders.
func (e *Engine) sweepPlaceholders() {
	_ = e.store.EachSandbox(func(data []byte) error {
		var sb Sandbox
		if err := json.Unmarshal(data, &sb); err != nil {
			return nil
		}
		for _, f := range e.personsFolders(&sb) {
			_ = e.inFolder(f, func(d *jailfs.Dir) error {
				autorun.Sweep(d)
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
	err := e.inFolder(j.root, func(d *jailfs.Dir) error {
		var err error
		entries, _, err = autorun.Find(d, j.root)
		var re *autorun.RefusedError
		if errors.As(err, &re) {
			err = nil // the fixed names still count
		}
		return err
	})
	if err != nil {
		return err
	}
	if autorun.Covers(entries, j.name) {
		return badField("path", j.rel, "is read-only for sandboxes: programs on this machine (agents, git, editors) run code from it, so a sandbox may read it but not change it; change it on the host yourself")
	}
	return nil
}
