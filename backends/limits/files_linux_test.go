package limits

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSmallFilesAsOsDoes: writeSmall, readSmall and exists do what
// os.WriteFile, os.ReadFile and os.Stat do, errors and all.
func TestSmallFilesAsOsDoes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if exists(file) {
		t.Fatal("exists before the file was written")
	}
	if err := writeSmall(file, []byte("a longer first value")); err != nil {
		t.Fatal(err)
	}
	if err := writeSmall(file, []byte("0")); err != nil {
		t.Fatal(err)
	}
	if b, err := readSmall(file, 64); err != nil || string(b) != "0" {
		t.Fatalf("after two writes: %q, %v; want the second, the file truncated", b, err)
	}
	ref := filepath.Join(dir, "ref")
	if err := os.WriteFile(ref, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	refi, rerr := os.Stat(ref)
	if err != nil || rerr != nil || fi.Mode() != refi.Mode() || !exists(file) {
		t.Fatalf("the written file: %v (%v), os.WriteFile's %v (%v), exists %v", fi, err, refi, rerr, exists(file))
	}
	missing := filepath.Join(dir, "no", "f")
	for _, c := range []struct {
		what      string
		got, want error
	}{
		{"write", writeSmall(missing, []byte("1")), os.WriteFile(missing, []byte("1"), 0o644)},
		{"read", func() error { _, err := readSmall(missing, 64); return err }(), func() error { _, err := os.ReadFile(missing); return err }()},
		{"write to a folder", writeSmall(dir, []byte("1")), os.WriteFile(dir, []byte("1"), 0o644)},
		{"read a folder", func() error { _, err := readSmall(dir, 64); return err }(), func() error { _, err := os.ReadFile(dir); return err }()},
	} {
		if c.got == nil || c.want == nil || c.got.Error() != c.want.Error() {
			t.Errorf("%s: %v, os says %v", c.what, c.got, c.want)
		}
	}
}
