package pkgcache

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClearEmptiesWithoutFollowingLinks: a cache holds what sandboxed
// code wrote, read-only folders (Go's module cache) and links out of it
// included; Clear empties it, keeps the folder, and removes a link, not
// what it leads to.
func TestClearEmptiesWithoutFollowingLinks(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("not the cache's"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := ProjectKey("/home/ann/code/app")
	dir, err := s.Ensure(key, Owner{Project: "/home/ann/code/app"})
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, "go-mod", "example.com", "m@v1.0.0")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module m\n"), 0o444)
	os.Chmod(mod, 0o555)
	os.Symlink(outside, filepath.Join(dir, "npm"))
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Project != "/home/ann/code/app" || list[0].Files < 3 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := s.Clear(key); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("after Clear the cache holds %v (%v)", entries, err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "not the cache's" {
		t.Errorf("Clear reached through a link: %q %v", b, err)
	}
	if err := s.Remove(key); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("after Remove: %+v", list)
	}
}
