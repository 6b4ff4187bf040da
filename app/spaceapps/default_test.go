package spaceapps

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestAnAppRunsSandboxedUnlessItsManifestSaysNot: a manifest with no
// sandbox block, from a folder or a zip posted to the API, runs in a
// sandbox (open reads, network all); "enabled": false runs it with none,
// and its row says "no sandbox (manifest)"; an owner who turns one off
// reads "no sandbox (owner)". An app registered when apps ran with no
// sandbox by default gets one when the engine starts; one whose manifest
// said enabled: false keeps none.
func TestAnAppRunsSandboxedUnlessItsManifestSaysNot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.register(t, writeApp(t, probeManifest("plain", ""), map[string]string{"probe.py": probeApp}), false)
	v := f.start(t, "plain")
	if v.Sandbox.Isolation != "bwrap" || !v.Sandbox.Enabled || v.Sandbox.ReadMode != "open" || v.Sandbox.Network != NetworkAll || v.Sandbox.NoSandbox() != "" {
		t.Fatalf("an app with no sandbox block: %+v", v.Sandbox)
	}
	zipped, err := f.s.RegisterZip(ctx, makeZip(t, zipEntry{name: ManifestFile, data: probeManifest("zipped", "")}, zipEntry{name: "probe.py", data: probeApp}), nil)
	must(t, err)
	if sb := zipped.App.Sandbox; !sb.Enabled || sb.ReadMode != "open" || sb.Network != NetworkAll {
		t.Fatalf("a zip with no sandbox block: %+v", sb)
	}
	f.register(t, writeApp(t, probeManifest("bare", `{"enabled": false}`), map[string]string{"probe.py": probeApp}), false)
	bare := f.start(t, "bare")
	if bare.Sandbox.Isolation != "none" || bare.Sandbox.NoSandbox() != "no sandbox (manifest)" {
		t.Fatalf("an app whose manifest turns its sandbox off: %+v (%q)", bare.Sandbox, bare.Sandbox.NoSandbox())
	}
	off := false
	_, err = f.s.PutSandbox(ctx, "zipped", SandboxPatch{Enabled: &off})
	must(t, err)
	if row, _ := f.s.Get("zipped"); row.Sandbox.NoSandbox() != "no sandbox (owner)" {
		t.Fatalf("an app its owner turned off: %+v", row.Sandbox)
	}

	// Records of the old default: sandbox off, no one known to have
	// turned it off.
	for id, block := range map[string]string{"legacy": "", "legacy-off": `{"enabled": false}`} {
		rec := &record{Manifest: Manifest{ID: id, Name: id, Runtime: ManifestRuntime{Start: "true"}}, Dir: f.root, Sandbox: defaultSettings(), Env: map[string]string{}}
		if block != "" {
			rec.Manifest.Sandbox = &ManifestSandbox{}
			must(t, json.Unmarshal([]byte(block), rec.Manifest.Sandbox))
		}
		rec.Sandbox.Enabled = false
		must(t, f.e.PutSpaceApp(id, rec))
	}
	s2, err := New(Options{Engine: f.e})
	must(t, err)
	defer s2.Close()
	for id, want := range map[string]string{"legacy": "", "legacy-off": "no sandbox (manifest)"} {
		row, err := s2.Get(id)
		must(t, err)
		if row.Sandbox.NoSandbox() != want || row.Sandbox.Enabled != (want == "") {
			t.Errorf("%s after the upgrade: %+v (%q), want %q", id, row.Sandbox, row.Sandbox.NoSandbox(), want)
		}
	}
	_ = app.SourceSpaceApp
}

// TestNoSandboxWritesTheFolderOfAnUnsandboxedApp: an app run in place
// with no sandbox runs whatever its folder holds on this machine at its
// next start, so no sandbox may have that folder (or one that holds it,
// or one in it) read-write: an agent would make the owner's app run its
// code unconfined. Read-only stays allowed, and so does the folder of an
// app with a sandbox, and the folder once the app is given one.
func TestNoSandboxWritesTheFolderOfAnUnsandboxedApp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// The app's folder in one of the person's own, which holds it.
	parent := testutil.SandboxDir(t, "sapp-parent-")
	must(t, os.Chmod(parent, 0o755))
	dir := filepath.Join(parent, "inplace")
	must(t, os.Rename(writeApp(t, probeManifest("inplace", `{"enabled": false}`), map[string]string{"probe.py": probeApp}), dir))
	must(t, os.MkdirAll(filepath.Join(dir, "lib"), 0o755))
	f.register(t, dir, true)
	bwrapName := "bwrap"
	create := func(src string, ro bool) error {
		sb, err := f.e.Create(ctx, app.SandboxConfig{Backend: &bwrapName, Mounts: []backends.Mount{{Source: src, Target: "m", ReadOnly: ro}}})
		if err == nil {
			_, _ = f.e.Delete(ctx, sb.ID, true)
		}
		return err
	}
	for _, src := range []string{dir, filepath.Join(dir, "lib"), parent} {
		if err := create(src, false); err == nil || !strings.Contains(err.Error(), "runs with no sandbox") {
			t.Errorf("a read-write mount of %s (the unsandboxed app's folder is %s): %v, want refused", src, dir, err)
		}
	}
	if err := create(dir, true); err != nil {
		t.Errorf("a read-only mount of the app's folder: %v", err)
	}
	on := true
	_, err := f.s.PutSandbox(ctx, "inplace", SandboxPatch{Enabled: &on})
	must(t, err)
	// (This fixture's engine may still refuse it for the sandbox user's
	// write access; never for the app.)
	if err := create(dir, false); err != nil && strings.Contains(err.Error(), "runs with no sandbox") {
		t.Errorf("a read-write mount of the folder once the app has a sandbox: %v", err)
	}
}
