package autorun

import (
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/senclaw/sandbox/app/jailfs"
)

// A folder a sandbox writes may hold projects of its own (~/work with a
// repository in each folder): each one's agents' and git's files are
// kept read-only as the folder's are. Nested finds them, a bounded
// number of levels down.

// notWalked are folders Nested does not look into: what package managers
// install (node_modules, a virtualenv, caches: thousands of folders in
// which nobody works, and the bulk of a walk's cost), git's own folder
// (Find reads what of it matters), and the agents' and editors' folders
// (Find keeps them read-only whole, or they stand empty).
var notWalked = append([]string{"node_modules", ".venv", "__pycache__", ".tox", ".cache"}, Dirs...)

// Bounds of Nested's walk beyond its depth: the folders it lists and the
// entries it reads (a folder of a million files, a tree of photos).
// Variables for the tests only.
var (
	maxWalked  = 10000
	maxEntries = 1 << 20
)

// Nested lists the projects below the folder d (relative to it, by
// level): the folders at most depth levels down that hold one of Dirs or
// Files (a link by such a name counts: Find refuses it). A folder the
// sandbox user may not list, or a link, is not looked into: the sandbox
// cannot see into the one, and programs on this machine reach the other
// where it leads. Past limit projects, or past maxWalked folders or
// maxEntries entries, it returns the projects found and a RefusedError
// (Bound): keeping only some read-only would let the sandbox write the
// others'. listed counts the folders listed (the walk's cost).
func Nested(d *jailfs.Dir, depth, limit int) (projects []string, listed int, err error) {
	tooMuch := func(dir string) error {
		return &RefusedError{Rel: dir, Bound: true, Reason: fmt.Sprintf(
			"lies past the %d folders (or %d entries) senclaw looks through for projects (folders with .git, .claude or another of the files agents and git run code from) within nestedProjectDepth (%d) levels: it keeps each one's files read-only for the sandbox, and refuses rather than keep only some; give a narrower folder, or lower nestedProjectDepth in the settings",
			maxWalked, maxEntries, depth)}
	}
	entries := 0
	level := []string{"."}
	for n := 0; n <= depth && len(level) > 0; n++ {
		var next []string
		for _, dir := range level {
			if listed == maxWalked {
				return projects, listed, tooMuch(dir)
			}
			children, err := d.Children(dir, maxEntries-entries)
			if errors.Is(err, jailfs.ErrTooMany) {
				return projects, listed, tooMuch(dir)
			}
			if err != nil {
				continue
			}
			listed++
			entries += len(children)
			if dir != "." && slices.ContainsFunc(children, func(c jailfs.Child) bool { return isMark(c.Name) }) {
				if len(projects) == limit {
					return projects, listed, &RefusedError{Rel: dir, Reason: fmt.Sprintf(
						"is one project (a folder with .git, .claude or another of the files agents and git run code from) more than nestedProjectLimit (%d) within nestedProjectDepth (%d) levels: senclaw keeps each one's files read-only for the sandbox, and refuses rather than keep only some; give a narrower folder, or raise nestedProjectLimit in the settings",
						limit, depth), Bound: true}
				}
				projects = append(projects, dir)
			}
			if n == depth {
				continue
			}
			for _, c := range children {
				if c.Dir && !c.Link && !slices.Contains(notWalked, c.Name) {
					next = append(next, path.Join(dir, c.Name))
				}
			}
		}
		slices.Sort(next) // the same order every run, whatever the disk's
		level = next
	}
	return projects, listed, nil
}

// isMark reports whether a folder's entry makes it a project.
func isMark(name string) bool {
	return slices.Contains(Dirs, name) || slices.Contains(Files, name)
}
