package bwrap

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// TestDetectHostSaysWhatEachPathIs: the system roots as os.Lstat and
// os.Readlink see them, and each hidden or masked path as os.Stat does
// (a link by what it points to).
func TestDetectHostSaysWhatEachPathIs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file, sub, gone := filepath.Join(dir, "file"), filepath.Join(dir, "sub"), filepath.Join(dir, "gone")
	toDir, toFile, dangling := filepath.Join(dir, "to-dir"), filepath.Join(dir, "to-file"), filepath.Join(dir, "dangling")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{toDir: sub, toFile: file, dangling: gone} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	spec := &backends.Spec{FsMode: backends.FsOpen, Hidden: []string{file, sub, gone}, Masked: []string{toDir, toFile, dangling}}
	h := detectHost(spec, &backends.RuntimeScan{})
	want := map[string]PathKind{file: File, sub: Dir, gone: Absent}
	for p, k := range want {
		if h.Hidden[p] != k {
			t.Errorf("hidden %s: %v, want %v", p, h.Hidden[p], k)
		}
	}
	want = map[string]PathKind{toDir: Dir, toFile: File, dangling: Absent}
	for p, k := range want {
		if h.Masked[p] != k {
			t.Errorf("masked %s: %v, want %v", p, h.Masked[p], k)
		}
	}
	var roots []Root
	for _, p := range backends.SystemRoots() {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		r := Root{Path: p}
		if fi.Mode()&os.ModeSymlink != 0 {
			if r.Symlink, err = os.Readlink(p); err != nil {
				continue
			}
		}
		roots = append(roots, r)
	}
	if !slices.Equal(h.Roots, roots) {
		t.Errorf("roots %v, want %v", h.Roots, roots)
	}
}
