package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// Strict mode shows the system roots, not /opt whole: other applications'
// files stay out of view; only the install prefixes of the interpreters
// on the sandbox's PATH come in.
func TestStrictModeDoesNotShowOpt(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	entries, err := os.ReadDir("/opt")
	if err != nil || len(entries) == 0 {
		t.Skip("this host's /opt is empty: nothing to hide")
	}
	b := New(Options{})
	for _, u := range sandboxUsers(t) {
		for _, mode := range []backends.FsMode{backends.FsStrict, backends.FsAllowlist} {
			t.Run(u.Name+"_"+string(mode), func(t *testing.T) {
				t.Parallel()
				d := newTestDirs(t, u)
				spec := newSpec(t, u, d.ws, "sh", "-c", "ls -A /opt 2>/dev/null; echo end")
				spec.FsMode = mode
				r := run(t, b, spec)
				prefixes := DetectHost(spec).Prefixes
				for _, name := range strings.Fields(strings.TrimSuffix(r.stdout, "end\n")) {
					if !slices.Contains(prefixes, "/opt/"+name) {
						t.Errorf("%s mode shows /opt/%s, which is no interpreter's install prefix (%q)", mode, name, prefixes)
					}
				}
				if !strings.HasSuffix(r.stdout, "end\n") {
					t.Fatalf("the run failed: %q %q", r.stdout, r.stderr)
				}
			})
		}
	}
}

// The prefixes are those under /opt of the files the PATH's interpreters
// lead to, each once, sorted, at most MaxPrefixes; a program of another
// name, or an interpreter outside /opt, adds none.
func TestInstallPrefixes(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	opt, bin := filepath.Join(base, "opt"), filepath.Join(base, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	install := func(prefix, name string) {
		dir := filepath.Join(opt, prefix, "bin")
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
		must(t, os.Symlink(filepath.Join(dir, name), filepath.Join(bin, name)))
	}
	install("python3.12", "python3.12")
	install("node-20", "node")
	install("tool", "tool")
	must(t, os.WriteFile(filepath.Join(bin, "python3.11"), []byte("#!/bin/sh\n"), 0o755))
	got := installPrefixes(bin+":/nonexistent", opt, &backends.RuntimeScan{})
	if want := []string{opt + "/node-20", opt + "/python3.12"}; !slices.Equal(got, want) {
		t.Errorf("prefixes %q, want %q", got, want)
	}
	for i := range MaxPrefixes + 4 {
		install(fmt.Sprintf("py%02d", i), fmt.Sprintf("python3.%d", 20+i))
	}
	if got := installPrefixes(bin, opt, &backends.RuntimeScan{}); len(got) != MaxPrefixes {
		t.Errorf("%d prefixes, want at most %d", len(got), MaxPrefixes)
	}
}
