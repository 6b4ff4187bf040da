// Package hostsecrets lists what under a system root other users may not read.
//
// The list is walked again only when inotify says the root changed. A
// host exec runs as the engine's user, and on a root engine that is
// uid 0 without capabilities, which the file modes still let read root's
// own files (/etc/shadow, /etc/ssl/private) and its groups'. The
// Landlock domain of a tenant's host exec reads the system roots but
// keeps these out, so it needs their list at every run, including a
// file made a moment ago. Walking /etc costs milliseconds; a List that
// finds the watches quiet costs one read of the inotify descriptor.
//
// Every directory walked is watched (for entries made, removed, moved
// and their modes changed) before it is read, so that a change during
// the walk is seen at the next List, which walks again: the list is
// never older than the last List's read of the queue. Where inotify is
// not there, or a directory cannot be watched, or the queue overflowed,
// every List walks.
package hostsecrets

import (
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
)

// Watch keeps the list of one root.
type Watch struct {
	root string
	mu   sync.Mutex
	in   *inotify // nil: walk at every List
	list []string
	// fresh: list is what the root held when the queue was last read.
	fresh bool
	// walks counts the walks (tests).
	walks int
}

// New watches root; nothing is read until the first List.
func New(root string) *Watch {
	return &Watch{root: root, in: newInotify()}
}

// List returns the paths under root other users may not read: files
// without o+r, and folders without o+rx (not walked into). Symbolic
// links are not followed.
func (w *Watch) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.in != nil && w.fresh && !w.in.changed() {
		return slices.Clone(w.list)
	}
	w.fresh = false
	if w.in != nil {
		w.in.changed() // what is queued now is seen by this walk
	}
	// Fresh only if every folder read is watched, the root among them
	// (a root that is not there yet is walked again at every List).
	ok, rootWatched := true, false
	w.list = walk(w.root, func(dir string) {
		if w.in == nil || !w.in.watch(dir) {
			ok = false
		} else if dir == w.root {
			rootWatched = true
		}
	})
	w.walks++
	w.fresh = ok && rootWatched
	return slices.Clone(w.list)
}

// Close gives the watches up.
func (w *Watch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.in != nil {
		w.in.close()
		w.in = nil
	}
}

// walk lists what under root other users may not read, calling enter
// on each folder it reads, before it reads it.
func walk(root string, enter func(dir string)) []string {
	out := []string{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		perm := fi.Mode().Perm()
		switch {
		case d.IsDir() && perm&0o005 != 0o005:
			out = append(out, p)
			return fs.SkipDir
		case d.IsDir():
			enter(p)
		case perm&0o004 == 0:
			out = append(out, p)
		}
		return nil
	})
	return out
}
