package tracer

import (
	"errors"
	"fmt"
	"io/fs"
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

// TakeSnapshot walks root (never following links) and records up to limit
// entries, skipping the top-level names in skip (the engine's own dirs).
func TakeSnapshot(root string, skip []string, limit int) *Snapshot {
	s := &Snapshot{root: root, files: map[string]fileState{}}
	errStop := errors.New("stop")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if slices.Contains(skip, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if len(s.files) >= limit {
			s.Truncated = true
			return errStop
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		s.files[rel] = fileState{size: info.Size(), mtime: info.ModTime(), dir: d.IsDir()}
		return nil
	})
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
