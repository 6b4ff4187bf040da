package backends

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestRuntimeOfFile(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"python": RuntimePython, "python3": RuntimePython, "python3.11": RuntimePython, "python3.13t": RuntimePython,
		"python3.12d": RuntimePython, "python2.7": RuntimePython, "pypy3": RuntimePython, "pypy3.10": RuntimePython,
		"libpython3.11.so.1.0": RuntimePython, "libpython3.so": RuntimePython, "libpypy3.9-c.so": RuntimePython,
		"node": RuntimeNode, "nodejs": RuntimeNode, "libnode.so.108": RuntimeNode, "libnode.so": RuntimeNode,
		"python3-config": "", "python3.11-config": "", "pythonrc.py": "", "libpython3.11.a": "", "nodemon": "",
		"node-gyp": "", "npm": "", "sh": "", "pydoc3": "", "libnodeps.so": "",
	} {
		if got := RuntimeOfFile(name); got != want {
			t.Errorf("RuntimeOfFile(%q) = %q, want %q", name, got, want)
		}
	}
}

// An interpreter installed after a scan is found by the next one, and a
// link retargeted since is followed to its new file.
func TestRuntimeScanSeesNewInterpreters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var scan RuntimeScan
	old := write("python3.11")
	// The directory is an hour old when first read, so the scan keeps it.
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	if got := scan.Files([]string{RuntimePython}, []string{dir}); !slices.Equal(got, []string{old}) {
		t.Fatalf("first scan %q", got)
	}
	newer := write("python3.99")
	if err := os.Symlink(newer, filepath.Join(dir, "python3")); err != nil {
		t.Fatal(err)
	}
	write("nodemon")
	if got := scan.Files([]string{RuntimePython}, []string{dir}); !slices.Equal(got, []string{old, newer}) {
		t.Fatalf("after installing python3.99: %q", got)
	}
}

// FilesWithin answers from the last scan while it is young enough, and
// scans again once it is older.
func TestRuntimeScanFilesWithin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := filepath.Join(dir, "python3.11")
	if err := os.WriteFile(old, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var scan RuntimeScan
	if got := scan.FilesWithin([]string{RuntimePython}, []string{dir}, time.Hour); !slices.Equal(got, []string{old}) {
		t.Fatalf("first scan %q", got)
	}
	newer := filepath.Join(dir, "python3.99")
	if err := os.WriteFile(newer, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := scan.FilesWithin([]string{RuntimePython}, []string{dir}, time.Hour); !slices.Equal(got, []string{old}) {
		t.Fatalf("within the hour, the last scan's answer: %q", got)
	}
	if got := scan.FilesWithin([]string{RuntimePython}, []string{dir}, 0); !slices.Equal(got, []string{old, newer}) {
		t.Fatalf("older than maxAge, a new scan: %q", got)
	}
}
