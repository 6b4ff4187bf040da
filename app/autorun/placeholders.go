package autorun

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sync"
	"syscall"

	"github.com/senclaw/sandbox/app/jailfs"
)

// PlaceholderMode is the mode of the empty directory that stands for a
// missing one during a run: read-only for everyone (it is bound
// read-only too), and so told apart from a directory a person made
// (Sweep). Not 0: git in the sandbox would warn at every commit that the
// hooks it cannot look into are "not executable".
const PlaceholderMode fs.FileMode = 0o555

// Placeholders are the empty directories that stand for missing ones
// while runs need them: a directory a backend binds read-only over
// itself must exist, and the sandbox must not be able to make it. The
// first run that needs one makes it, the last one that ends removes it,
// so that nothing is left in the folder once no run is going on (and a
// host program that makes one meanwhile keeps what it made: a directory
// that is no longer empty, or no longer the one made, stays).
type Placeholders struct {
	mu   sync.Mutex
	held map[string]*placeholder
}

type placeholder struct {
	n             int
	inode, device uint64
}

// ErrNotWritable is Hold finding that the caller (the sandbox user) may
// not make the directory: then the sandbox may not either, and nothing
// needs to stand there.
var ErrNotWritable = errors.New("the sandbox user may not make it")

// Hold makes sure a directory stands at rel in d (folder is d's host
// path) for one run: it makes an empty one with PlaceholderMode if
// nothing is there, and counts the run. Each Hold that returned nil is
// undone with Release; it is called as the sandbox user.
func (p *Placeholders) Hold(d *jailfs.Dir, folder, rel string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := path.Join(folder, rel)
	if h, ok := p.held[key]; ok {
		if e, err := d.Lstat(rel); err == nil && e.Inode == h.inode && e.Device == h.device {
			h.n++
			return nil
		}
		delete(p.held, key) // removed or replaced under us: start again
	}
	err := d.Mkdir(rel, PlaceholderMode)
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return ErrNotWritable
	case err != nil && !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("making an empty %s to keep it read-only: %w", rel, err)
	}
	e, err := d.Lstat(rel)
	if err != nil {
		return fmt.Errorf("checking the empty %s: %w", rel, err)
	}
	if !e.Mode.IsDir() {
		return &RefusedError{Rel: rel, Reason: "appeared while the run started, and not as a directory; run again"}
	}
	if p.held == nil {
		p.held = map[string]*placeholder{}
	}
	p.held[key] = &placeholder{n: 1, inode: e.Inode, device: e.Device}
	return nil
}

// Release undoes one Hold; the last one removes the directory if it is
// still the empty one made (or found) for the runs.
func (p *Placeholders) Release(d *jailfs.Dir, folder, rel string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := path.Join(folder, rel)
	h, ok := p.held[key]
	if !ok {
		return
	}
	if h.n--; h.n > 0 {
		return
	}
	delete(p.held, key)
	if e, err := d.Lstat(rel); err == nil && e.Inode == h.inode && e.Device == h.device && isPlaceholder(e) {
		_ = d.RemoveEmpty(rel) // not empty: a host program uses it now
	}
}

// isPlaceholder reports whether e looks like a placeholder: a directory
// with PlaceholderMode.
func isPlaceholder(e jailfs.Entry) bool {
	return e.Mode.IsDir() && e.Mode.Perm() == PlaceholderMode
}

// Sweep removes the placeholders a run left in the folder d, and in its
// projects (Nested's), when the engine stopped before it could (it calls
// Sweep before any run): empty directories with PlaceholderMode at the
// names Find makes them for.
func Sweep(d *jailfs.Dir, projects ...string) {
	for _, base := range append([]string{"."}, projects...) {
		for _, rel := range append(slices.Clone(Dirs), ".git/hooks") {
			rel = path.Join(base, rel)
			if e, err := d.Lstat(rel); err == nil && isPlaceholder(e) {
				_ = d.RemoveEmpty(rel)
			}
		}
	}
}
