package tracer

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// MaxDiffEntries bounds the workspace walk of a diff.
const MaxDiffEntries = 20000

// Snapshot is what a workspace held: names, sizes, modification times.
type Snapshot struct {
	root  string
	files map[string]fileState
	// Truncated is set when the walk stopped at its limit.
	Truncated bool
}

type fileState struct {
	size  int64
	mtime time.Time
	dir   bool
}

// Bounds of a workspace walk besides its entry limit: the bytes of the
// names it keeps, and how many entries of a directory it reads at once, so
// that a directory of a million entries is never held whole.
const (
	maxSnapshotBytes = 8 << 20
	readBatch        = 256
)

// TakeSnapshot walks root and records up to limit entries, skipping the
// top-level names in skip (the engine's own dirs). The workspace belongs
// to the sandboxed code, which may swap a directory for a link while the
// walk goes: every step goes through an os.Root of root, so the walk never
// leaves it. It goes breadth first and holds one directory open at a time,
// however deep the tree.
func TakeSnapshot(root string, skip []string, limit int) *Snapshot {
	s := &Snapshot{root: root, files: map[string]fileState{}}
	r, err := os.OpenRoot(root)
	if err != nil {
		return s
	}
	defer r.Close()
	names := 0
	queue := []string{"."}
	for len(queue) > 0 && !s.Truncated {
		dir := queue[0]
		queue = queue[1:]
		f, err := r.Open(dir)
		if err != nil {
			continue
		}
		for !s.Truncated {
			entries, err := f.ReadDir(readBatch)
			for _, d := range entries {
				rel := path.Join(dir, d.Name())
				if dir == "." && slices.Contains(skip, rel) {
					continue
				}
				if len(s.files) >= limit || names >= maxSnapshotBytes {
					s.Truncated = true
					break
				}
				info, err := r.Lstat(rel)
				if err != nil {
					continue
				}
				s.files[filepath.FromSlash(rel)] = fileState{size: info.Size(), mtime: info.ModTime(), dir: info.IsDir()}
				names += len(rel)
				if info.IsDir() {
					queue = append(queue, rel)
				}
			}
			if err != nil {
				break
			}
		}
		f.Close()
	}
	return s
}

// SnapshotEntry is one entry of a walk done elsewhere (a workspace on
// another machine, walked in its container): its path below the root.
type SnapshotEntry struct {
	Path  string
	Size  int64
	MTime time.Time
	Dir   bool
}

// SnapshotOf is the snapshot of root that entries describe; truncated
// says the walk stopped at its limit.
func SnapshotOf(root string, entries []SnapshotEntry, truncated bool) *Snapshot {
	s := &Snapshot{root: root, files: map[string]fileState{}, Truncated: truncated}
	for _, e := range entries {
		s.files[filepath.FromSlash(e.Path)] = fileState{size: e.Size, mtime: e.MTime, dir: e.Dir}
	}
	return s
}

// Diff returns a file.write event (source "diff") for every entry created,
// modified or deleted between before and after, and a trace.truncated
// marker when either walk stopped at its limit.
func Diff(before, after *Snapshot, timeMs int64) []backends.TraceEvent {
	var out []backends.TraceEvent
	add := func(rel, detail string) {
		out = append(out, backends.TraceEvent{TimeMs: timeMs, Kind: KindWrite,
			Target: filepath.Join(after.root, rel), Detail: detail, Source: SourceDiff})
	}
	for _, rel := range slices.Sorted(mapKeys(after.files)) {
		a := after.files[rel]
		b, ok := before.files[rel]
		switch {
		case !ok && a.dir:
			add(rel, "created directory")
		case !ok:
			add(rel, fmt.Sprintf("created (%d bytes)", a.size))
		case !a.dir && (a.size != b.size || !a.mtime.Equal(b.mtime)):
			add(rel, fmt.Sprintf("modified (%d -> %d bytes)", b.size, a.size))
		}
	}
	if !before.Truncated && !after.Truncated {
		for _, rel := range slices.Sorted(mapKeys(before.files)) {
			if _, ok := after.files[rel]; !ok {
				add(rel, "deleted")
			}
		}
	} else {
		out = append(out, backends.TraceEvent{TimeMs: timeMs, Kind: KindTruncated, Target: after.root,
			Detail: fmt.Sprintf("the workspace diff stopped after %d entries: changes beyond them and deletions are not listed", MaxDiffEntries),
			Source: SourceDiff})
	}
	return out
}
