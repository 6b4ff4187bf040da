package tracer

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The workspace walk stays inside the workspace (a link to a directory
// outside is an entry, never walked), skips the engine's own dirs, and
// stops at its limit saying so.
func TestSnapshotBoundsAndLinks(t *testing.T) {
	t.Parallel()
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret-name"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b", ".senclaw/trace"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(ws, "a", "link")); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(ws, "a", "b", "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := TakeSnapshot(ws, []string{".senclaw"}, 1000)
	if s.Truncated || len(s.files) != 53 { // a, a/b, a/link, 50 files
		t.Fatalf("%d entries, truncated %v: %v", len(s.files), s.Truncated, s.files)
	}
	for rel := range s.files {
		if filepath.Base(rel) == "secret-name" || filepath.Base(rel) == "trace" {
			t.Errorf("the walk listed %s", rel)
		}
	}
	if s := TakeSnapshot(ws, nil, 10); !s.Truncated || len(s.files) != 10 {
		t.Errorf("limit 10: %d entries, truncated %v", len(s.files), s.Truncated)
	}
	if s := TakeSnapshot(ws, []string{".senclaw"}, 53); s.Truncated {
		t.Error("a walk that ends exactly at its limit says it was truncated")
	}
}
