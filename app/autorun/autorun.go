// Package autorun finds the files through which programs on this machine run
// code unasked.
//
// It looks in a folder of the person's that a sandbox may write (an agent's
// project, a `senclaw run --here` folder, a read-write mount, a Space App's
// own folder) for the agents' settings and hooks (Claude Code's .claude,
// Gemini CLI's .gemini, Codex's .codex, Cursor's .cursor), editors'
// workspace settings (.vscode, .idea), senclaw's own project policy
// (.senclaw/policy.json, which a sandbox must not loosen), direnv's .envrc, an MCP server list
// (.mcp.json), and git's repository configuration and hooks (.git/config,
// .git/hooks, a .git file's gitdir, the hooks directory core.hooksPath
// names, the files a config includes and the programs it names by path). A
// sandboxed command that changed one would have code run outside the sandbox
// later, by the agent or by git on the host, with the person's rights.
//
// Find says what a folder holds of them; the engine makes each read-only
// for a run (a backend binds it read-only over itself), and a missing
// directory stands as an empty one for the run (Placeholders), so that
// the sandbox cannot make it either. Missing files (.envrc, .mcp.json)
// are not made: direnv and the agents ask before they use a new one.
// Covers is the same rule for the file API, by name.
//
// Everything is read through a jailfs.Dir: no link is followed, and a
// link where one of these names is refuses the run (the sandbox could
// make it lead anywhere). Reads are bounded.
//
// What it does not cover: a repository the sandbox makes anywhere else in
// the folder (its config is its own, and git on this machine would run
// what it names when someone works in that folder), and project files
// that a protected hook or setting runs in turn (a Claude Code hook
// command ./scripts/x.sh, husky's scripts other than its hooks
// directory, pre-commit's .pre-commit-config.yaml, npm scripts): those
// are project code, which a sandbox edits like any other.
package autorun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app/jailfs"
)

// Dirs are the directories a folder's programs read settings and hooks
// from (.git last, which Find walks on its own); a missing one stands as an empty, read-only directory for a run.
var Dirs = []string{".claude", ".gemini", ".codex", ".cursor", ".vscode", ".idea", ".senclaw", ".git"}

// Files are the single files; a missing one is not made (direnv and the
// agents ask before they use a new one).
var Files = []string{".envrc", ".mcp.json", ".gitmodules"}

// Entry is one thing in a folder that a sandbox must not change.
type Entry struct {
	// Rel is its path in the folder: clean and relative.
	Rel string `json:"rel"`
	// Dir says that it is, or, missing, must stand as, a directory.
	Dir bool `json:"dir,omitempty"`
	// Missing says that nothing is there yet.
	Missing bool `json:"missing,omitempty"`
}

// RefusedError is a folder that holds what cannot be made read-only.
type RefusedError struct {
	// Rel is the path in the folder; Reason says why and what to do.
	Rel, Reason string
	// Bound says that the folder holds more projects than the walk may
	// take (Nested): what lies past them is not known.
	Bound bool
}

func (e *RefusedError) Error() string { return e.Rel + " " + e.Reason }

// Bounds on what Find reads.
const (
	maxConfig  = 256 << 10
	maxGitFile = 4 << 10
	maxHooks   = 256
	maxRepos   = 32
)

// Find lists what in the folder d must be read-only for a sandbox that
// writes it. folder is d's host path (for absolute paths a repository's
// files name). Elsewhere are host paths outside the folder that it leads
// to (a .git file's gitdir, a hook linked out): the caller checks that
// no sandbox may write them. An error is a RefusedError or a failure to
// read.
func Find(d *jailfs.Dir, folder string) (entries []Entry, elsewhere []string, err error) {
	return FindNested(d, folder, nil)
}

// FindNested is Find for the folder and for each of projects (folders
// below it, from Nested, relative to it) as if each were a folder of its
// own: their entries, relative to the folder, together.
func FindNested(d *jailfs.Dir, folder string, projects []string) (entries []Entry, elsewhere []string, err error) {
	f := &finder{d: d, folder: path.Clean(folder)}
	for _, base := range append([]string{"."}, projects...) {
		f.base, f.repos = base, 0
		if err := f.project(); err != nil {
			return nil, nil, err
		}
	}
	return f.entries, f.elsewhere, nil
}

// project adds what the project at f.base holds.
func (f *finder) project() error {
	for _, name := range Dirs[:len(Dirs)-1] {
		if err := f.top(name, true); err != nil {
			return err
		}
	}
	for _, name := range Files {
		if err := f.top(name, false); err != nil {
			return err
		}
	}
	return f.git()
}

// Covers reports whether rel (clean, relative to the folder) is or lies
// in one of the fixed names at the folder's top or in one of projects
// (Nested's), or in one of entries: the file API writes none of them.
// Names compare without case (a case-insensitive disk reaches .Claude
// as .claude).
func Covers(entries []Entry, rel string, projects ...string) bool {
	under := func(p, root string) bool {
		p, root = strings.ToLower(p), strings.ToLower(root)
		return p == root || strings.HasPrefix(p, root+"/")
	}
	for _, base := range append([]string{"."}, projects...) {
		for _, n := range append(slices.Clone(Dirs), Files...) {
			if under(rel, path.Join(base, n)) {
				return true
			}
		}
	}
	for _, e := range entries {
		if under(rel, e.Rel) {
			return true
		}
	}
	return false
}

type finder struct {
	d      *jailfs.Dir
	folder string
	// base is the project being looked at: "." (the folder), or a
	// folder below it, whose work tree top it is.
	base      string
	entries   []Entry
	elsewhere []string
	repos     int
}

func (f *finder) add(e Entry) {
	for _, x := range f.entries {
		if x.Rel == e.Rel {
			return
		}
	}
	f.entries = append(f.entries, e)
}

// kind is what rel is: missing, a directory, a file; a link is refused.
// A placeholder (made for another run going on) counts as missing: this
// run holds it too.
func (f *finder) kind(rel string) (exists, dir bool, err error) {
	e, err := f.d.Lstat(rel)
	if err == nil && isPlaceholder(e) {
		return false, true, nil
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, false, nil
	case errors.Is(err, jailfs.ErrLink):
		return false, false, &RefusedError{Rel: rel, Reason: "lies in a folder that is a symbolic link: programs on this machine read it through the link, and the sandbox could make it lead anywhere; make it a real folder"}
	case err != nil:
		return false, false, fmt.Errorf("checking %s: %w", rel, err)
	case e.Mode&fs.ModeSymlink != 0:
		return false, false, &RefusedError{Rel: rel, Reason: fmt.Sprintf("is a symbolic link (to %q): programs on this machine read it, and the sandbox could make it lead anywhere; replace the link with what it points to", e.Link)}
	}
	return true, e.Mode.IsDir(), nil
}

// top adds a name at the project's top.
func (f *finder) top(name string, dir bool) error {
	name = path.Join(f.base, name)
	exists, isDir, err := f.kind(name)
	switch {
	case err != nil:
		return err
	case exists:
		f.add(Entry{Rel: name, Dir: isDir})
	case dir:
		f.add(Entry{Rel: name, Dir: true, Missing: true})
	}
	return nil
}

// git adds the folder's repository: .git itself when it is a file (a
// worktree's or a submodule's pointer) or missing, and what git reads
// code from in its git dir.
func (f *finder) git() error {
	git := path.Join(f.base, ".git")
	exists, dir, err := f.kind(git)
	switch {
	case err != nil:
		return err
	case !exists:
		f.add(Entry{Rel: git, Dir: true, Missing: true})
		return nil
	case dir:
		return f.repo(git, true)
	}
	f.add(Entry{Rel: git})
	b, err := f.read(git, maxGitFile)
	if err != nil {
		return err
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return nil // not a pointer git follows
	}
	rel, ok := f.inFolder(f.base, strings.TrimSpace(target))
	if !ok {
		return nil
	}
	return f.repo(rel, false)
}

// inFolder resolves p (relative to the folder's dir rel, or absolute) and
// returns it relative to the folder; a path outside the folder goes to
// elsewhere and reports false.
func (f *finder) inFolder(dir, p string) (string, bool) {
	abs := p
	if !path.IsAbs(p) {
		abs = path.Join(f.folder, dir, p)
	}
	abs = path.Clean(abs)
	if abs == f.folder {
		return ".", true
	}
	rel, ok := strings.CutPrefix(abs, f.folder+"/")
	if !ok {
		if !slices.Contains(f.elsewhere, abs) {
			f.elsewhere = append(f.elsewhere, abs)
		}
		return "", false
	}
	return rel, true
}

// repo adds a git dir g of the folder: its config files and hooks, what
// they name, and the git dirs of its submodules. main says that g is a
// repository's own .git, where git never puts a commondir.
func (f *finder) repo(g string, main bool) error {
	if f.repos++; f.repos > maxRepos {
		return nil
	}
	var configs []string
	for _, name := range []string{"config", "config.worktree"} {
		rel := g + "/" + name
		exists, _, err := f.kind(rel)
		if err != nil {
			return err
		}
		if exists {
			f.add(Entry{Rel: rel})
			configs = append(configs, rel)
		}
	}
	if err := f.hooks(g + "/hooks"); err != nil {
		return err
	}
	for _, c := range configs {
		if err := f.config(c); err != nil {
			return err
		}
	}
	if err := f.commondir(g, main); err != nil {
		return err
	}
	return f.modules(g+"/modules", 0)
}

// hooks adds a hooks directory (a placeholder when it is missing) and
// the files in the folder that its links lead to.
func (f *finder) hooks(rel string) error {
	exists, dir, err := f.kind(rel)
	switch {
	case err != nil:
		return err
	case !exists:
		f.add(Entry{Rel: rel, Dir: true, Missing: true})
		return nil
	}
	f.add(Entry{Rel: rel, Dir: dir})
	if !dir {
		return nil
	}
	list, err := f.d.ReadDir(rel)
	if err != nil {
		return fmt.Errorf("listing %s: %w", rel, err)
	}
	for i, e := range list {
		if i == maxHooks {
			break
		}
		if e.Link == "" {
			continue
		}
		if err := f.named(rel, rel+"/"+e.Name, e.Link, false); err != nil {
			return err
		}
	}
	return nil
}

// named adds what a repository file at what names by path (a linked
// hook, a config's program, include or hooks directory): p, relative to
// the folder's dir base or absolute. A missing file is refused: the
// sandbox could make it, and git would run it; a missing hooks directory
// stands as a placeholder.
func (f *finder) named(base, what, p string, hooksDir bool) error {
	rel, ok := f.inFolder(base, p)
	if !ok || rel == "." {
		return nil
	}
	exists, dir, err := f.kind(rel)
	switch {
	case err != nil:
		return err
	case !exists && hooksDir:
		f.add(Entry{Rel: rel, Dir: true, Missing: true})
	case !exists:
		return &RefusedError{Rel: what, Reason: fmt.Sprintf("names %s, which does not exist: the sandbox could make it, and git on this machine would run it; make that file, or change %s", rel, what)}
	default:
		f.add(Entry{Rel: rel, Dir: dir})
	}
	return nil
}

// commondir checks a git dir's commondir: a repository's own .git has
// none (git makes one only in a worktree's git dir), so one there was
// planted to make git read another config; a worktree's leads to the
// repository's git dir, whose files count too.
func (f *finder) commondir(g string, main bool) error {
	rel := g + "/commondir"
	exists, _, err := f.kind(rel)
	if err != nil || !exists {
		return err
	}
	if main {
		return &RefusedError{Rel: rel, Reason: "is not git's (git writes a commondir only in a worktree's git dir): it makes git read another config, which may run programs; remove it"}
	}
	f.add(Entry{Rel: rel})
	b, err := f.read(rel, maxGitFile)
	if err != nil {
		return err
	}
	common, ok := f.inFolder(g, strings.TrimSpace(string(b)))
	if !ok || common == g {
		return nil
	}
	return f.repo(common, true)
}

// modules adds the git dirs of the submodules under rel (each has a
// config), a few levels down.
func (f *finder) modules(rel string, depth int) error {
	exists, dir, err := f.kind(rel)
	if err != nil || !exists || !dir || depth > 3 {
		return err
	}
	list, err := f.d.ReadDir(rel)
	if err != nil {
		return fmt.Errorf("listing %s: %w", rel, err)
	}
	for _, e := range list {
		if !e.Mode.IsDir() {
			continue
		}
		sub := rel + "/" + e.Name
		if _, err := f.d.Lstat(sub + "/config"); err == nil {
			if err := f.repo(sub, true); err != nil {
				return err
			}
		} else if err := f.modules(sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// read reads rel, at most max bytes; a FIFO or device is not opened for
// reading.
func (f *finder) read(rel string, max int64) ([]byte, error) {
	file, err := f.d.OpenRegular(rel)
	if errors.Is(err, jailfs.ErrNotRegular) {
		return nil, &RefusedError{Rel: rel, Reason: "is not a regular file; git reads it as one"}
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if int64(len(b)) > max {
		return nil, &RefusedError{Rel: rel, Reason: fmt.Sprintf("is larger than %d KiB, more than senclaw reads of it to see what git would run", max>>10)}
	}
	return b, nil
}
