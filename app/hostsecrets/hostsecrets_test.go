package hostsecrets

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestAListIsNeverOlderThanTheRoot: every change that makes a file or
// folder unreadable to others (made so, chmod, moved in, deep down) is
// in the next List, and a List of an unchanged root walks nothing.
func TestAListIsNeverOlderThanTheRoot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify is Linux's")
	}
	root := t.TempDir()
	mk := func(p string, mode os.FileMode) string {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	shadow := mk("shadow", 0o600)
	mk("passwd", 0o644)
	w := New(root)
	defer w.Close()
	want := []string{shadow}
	check := func(what string, walked bool) {
		t.Helper()
		before := w.walks
		got := w.List()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: List = %q, want %q", what, got, want)
		}
		if did := w.walks > before; did != walked {
			t.Errorf("%s: walked %v, want %v", what, did, walked)
		}
	}
	check("the first List", true)
	check("an unchanged root", false)
	check("an unchanged root again", false)

	want = append(want, mk("a/b/key", 0o640))
	check("a private file made deep down", true)
	check("then unchanged", false)

	pub := mk("a/pub", 0o644)
	check("a public file made", true)
	if err := os.Chmod(pub, 0o600); err != nil {
		t.Fatal(err)
	}
	want = append(want, pub)
	check("a public file made private", true)

	priv := filepath.Join(root, "a", "private")
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	want = append(want, priv)
	check("a private folder made", true)

	outside := filepath.Join(t.TempDir(), "moved")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(root, "a", "b", "moved")
	if err := os.Rename(outside, moved); err != nil {
		t.Fatal(err)
	}
	want = append(want, moved)
	check("a private file moved in", true)

	if err := os.Remove(shadow); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(p string) bool { return p == shadow })
	check("a private file removed", true)

	if err := os.Chmod(filepath.Join(root, "a", "b"), 0o750); err != nil {
		t.Fatal(err)
	}
	want = []string{filepath.Join(root, "a", "b"), pub, priv}
	check("a folder closed to others", true)
	check("then unchanged", false)
}

// TestWithoutWatchesEveryListWalks: a root whose folders cannot be
// watched (gone) is walked at every List, never answered from memory.
func TestWithoutWatchesEveryListWalks(t *testing.T) {
	w := New(filepath.Join(t.TempDir(), "none"))
	defer w.Close()
	w.List()
	before := w.walks
	w.List()
	if w.walks == before {
		t.Error("a List of a root that could not be watched did not walk")
	}
}
