package spaceapps

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
)

type zipEntry struct {
	name, data string
	mode       os.FileMode
}

func makeZip(t *testing.T, entries ...zipEntry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.mode == 0 {
			e.mode = 0o644
		}
		h.SetMode(e.mode)
		fw, err := w.CreateHeader(h)
		must(t, err)
		_, err = fw.Write([]byte(e.data))
		must(t, err)
	}
	must(t, w.Close())
	return &buf
}

// TestZipUploads: a zip with the manifest at its root or in its one top
// folder registers; one with entries that climb out, absolute paths or
// links is refused, writes nothing outside and registers nothing.
func TestZipUploads(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	manifest := probeManifest("zipped", `{"enabled": true}`)
	victim := filepath.Join(f.root, "victim.txt")
	bad := []struct {
		name    string
		entries []zipEntry
		says    string
	}{
		{"dotdot", []zipEntry{{name: ManifestFile, data: manifest}, {name: "../victim.txt", data: "x"}}, "climbs out"},
		{"deep_dotdot", []zipEntry{{name: ManifestFile, data: manifest}, {name: "a/../../victim.txt", data: "x"}}, "climbs out"},
		{"absolute", []zipEntry{{name: ManifestFile, data: manifest}, {name: "/tmp/victim.txt", data: "x"}}, "absolute"},
		{"symlink", []zipEntry{{name: ManifestFile, data: manifest}, {name: "link", data: "/etc/passwd", mode: os.ModeSymlink | 0o777}}, "link"},
		{"no_manifest", []zipEntry{{name: "app.py", data: "print(1)"}}, "has no " + ManifestFile},
	}
	for _, b := range bad {
		_, err := f.s.RegisterZip(ctx, makeZip(t, b.entries...), nil)
		var fe *app.FieldError
		if !errors.As(err, &fe) || fe.Field != "zip" || !strings.Contains(err.Error(), b.says) {
			t.Errorf("%s: %v", b.name, err)
		}
	}
	if _, err := os.Stat(victim); err == nil {
		t.Fatal("a zip entry was written outside the app's folder")
	}
	if apps, _ := f.s.List(ctx, "*"); len(apps) != 0 {
		t.Fatalf("refused zips registered %d apps", len(apps))
	}
	if _, err := f.s.RegisterZip(ctx, bytes.NewReader([]byte("not a zip")), nil); err == nil || !strings.Contains(err.Error(), "not a zip") {
		t.Errorf("not a zip: %v", err)
	}
	big := &zeroReader{n: MaxZipBytes + 10}
	if _, err := f.s.RegisterZip(ctx, big, nil); err == nil || !strings.Contains(err.Error(), "larger than 50 MiB") {
		t.Errorf("a zip over 50 MiB: %v", err)
	}
	r, err := f.s.RegisterZip(ctx, makeZip(t, zipEntry{name: "probe/" + ManifestFile, data: manifest}, zipEntry{name: "probe/probe.py", data: probeApp}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Created || r.App.ID != "zipped" {
		t.Fatalf("registered %+v", r)
	}
	v := f.start(t, "zipped")
	if v.Sandbox.Isolation != "bwrap" {
		t.Fatalf("started %+v", v)
	}
}

// TestAZipDirectoryOfAMillionEntriesIsNotRead: a zip within the 50 MiB
// bound whose central directory lists a million empty entries with
// one-letter names (the end record's 16-bit count is the million's low
// bits, which is all archive/zip compares) is refused for its entries
// before its directory is read: reading it keeps every entry, some 270
// MiB of memory per upload. Not parallel: it measures the memory the
// registration allocates.
func TestAZipDirectoryOfAMillionEntriesIsNotRead(t *testing.T) {
	f := newFixture(t)
	const n = 1_000_000
	var b bytes.Buffer
	// One local header, of an empty file "a", that every entry names.
	local := make([]byte, 30)
	binary.LittleEndian.PutUint32(local, 0x04034b50)
	binary.LittleEndian.PutUint16(local[4:], 20)
	binary.LittleEndian.PutUint16(local[26:], 1)
	b.Write(local)
	b.WriteByte('a')
	dirAt := b.Len()
	entry := make([]byte, 46)
	binary.LittleEndian.PutUint32(entry, 0x02014b50)
	binary.LittleEndian.PutUint16(entry[4:], 20)
	binary.LittleEndian.PutUint16(entry[6:], 20)
	binary.LittleEndian.PutUint16(entry[28:], 1)
	for range n {
		b.Write(entry)
		b.WriteByte('a')
	}
	end := make([]byte, 22)
	binary.LittleEndian.PutUint32(end, 0x06054b50)
	binary.LittleEndian.PutUint16(end[8:], uint16(n&0xffff))
	binary.LittleEndian.PutUint16(end[10:], uint16(n&0xffff))
	binary.LittleEndian.PutUint32(end[12:], uint32(b.Len()-dirAt))
	binary.LittleEndian.PutUint32(end[16:], uint32(dirAt))
	b.Write(end)
	if b.Len() > MaxZipBytes {
		t.Fatalf("the zip is %d bytes, over the upload bound", b.Len())
	}
	if zr, err := zip.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len())); err != nil || len(zr.File) != n {
		t.Fatalf("archive/zip does not read the million entries (%v): the test zip is wrong", err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := f.s.RegisterZip(context.Background(), bytes.NewReader(b.Bytes()), nil)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := (after.TotalAlloc - before.TotalAlloc) >> 20
	t.Logf("%d bytes: refused in %v, %d MiB allocated: %v", b.Len(), took, alloc, err)
	var fe *app.FieldError
	if !errors.As(err, &fe) || fe.Field != "zip" || !strings.Contains(err.Error(), "more than 80000 entries; at most 20000") {
		t.Errorf("the million entries' zip: %v", err)
	}
	if alloc > 32 {
		t.Errorf("refusing the zip allocated %d MiB: its directory was read whole", alloc)
	}
}

type zeroReader struct{ n int }

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, os.ErrClosed
	}
	k := min(len(p), z.n)
	clear(p[:k])
	z.n -= k
	return k, nil
}

// TestRegisteringInPlaceUsesTheMountGuards: the home itself, a secret
// folder and the engine's own data are refused as apps' folders, as they
// are as mounts.
func TestRegisteringInPlaceUsesTheMountGuards(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	must(t, os.WriteFile(filepath.Join(f.home, ManifestFile), []byte(probeManifest("home", "")), 0o644))
	must(t, os.WriteFile(filepath.Join(f.home, ".ssh", ManifestFile), []byte(probeManifest("ssh", "")), 0o644))
	for _, dir := range []string{f.home, filepath.Join(f.home, ".ssh"), f.e.DataDir(), "/etc", "relative/dir"} {
		for _, inPlace := range []bool{true, false} {
			_, err := f.s.Register(ctx, RegisterRequest{Dir: dir, InPlace: inPlace})
			var fe *app.FieldError
			if !errors.As(err, &fe) || fe.Field != "dir" {
				t.Errorf("register %s (in place %v): %v", dir, inPlace, err)
			}
		}
	}
	folder := writeApp(t, probeManifest("folders", `{"enabled": true, "folders": [{"path": "`+filepath.Join(f.home, ".ssh")+`", "readOnly": true}]}`), map[string]string{"probe.py": probeApp})
	_, err := f.s.Register(ctx, RegisterRequest{Dir: folder})
	var fe *app.FieldError
	if !errors.As(err, &fe) || fe.Field != "sandbox.folders[0].path" {
		t.Errorf("a secret folder as an app's folder: %v", err)
	}
}

// TestReRegisteringUpdatesKeepingDataAndForce: an update keeps the app's
// data and a person's configuration; a forced manifest re-applies its
// block and locks it; a manifest that drops force drops the lock and
// keeps the confinement; rm --purge removes only the engine's copy.
func TestReRegisteringUpdatesKeepingDataAndForce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	dir := writeApp(t, probeManifest("upd", `{"enabled": true, "readMode": "strict"}`), map[string]string{"probe.py": probeApp})
	v := f.register(t, dir, false)
	must(t, os.WriteFile(filepath.Join(v.Dir, "data.db"), []byte("the app's data"), 0o644))
	open := "open"
	if _, err := f.s.PutSandbox(ctx, "upd", SandboxPatch{ReadMode: &open}); err != nil {
		t.Fatal(err)
	}
	r, err := f.s.Register(ctx, RegisterRequest{Dir: dir})
	must(t, err)
	if r.Created {
		t.Fatal("an update was reported as a new app")
	}
	if data, _ := os.ReadFile(filepath.Join(v.Dir, "data.db")); string(data) != "the app's data" {
		t.Fatal("an update lost the app's data")
	}
	sv, _ := f.s.Sandbox(ctx, "upd")
	if sv.Settings.ReadMode != "open" || sv.Forced {
		t.Fatalf("an update without force overrode the person's configuration: %+v", sv)
	}
	// Force: the block wins, and the sandbox cannot be disabled.
	must(t, os.WriteFile(filepath.Join(dir, ManifestFile), []byte(probeManifest("upd", `{"force": true, "readMode": "strict", "network": "off"}`)), 0o644))
	f.register(t, dir, false)
	sv, _ = f.s.Sandbox(ctx, "upd")
	if !sv.Forced || !sv.Settings.Enabled || sv.Settings.ReadMode != "strict" || sv.Settings.Network != "off" || sv.LockReason == "" {
		t.Fatalf("forced %+v", sv)
	}
	off := false
	_, err = f.s.PutSandbox(ctx, "upd", SandboxPatch{Enabled: &off})
	var ce *app.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "forces its sandbox") {
		t.Fatalf("disabling a forced sandbox: %v", err)
	}
	if _, err := f.s.PutSandbox(ctx, "upd", SandboxPatch{ReadMode: &open}); err != nil {
		t.Fatal(err)
	}
	f.register(t, dir, false) // force is re-applied
	if sv, _ = f.s.Sandbox(ctx, "upd"); sv.Settings.ReadMode != "strict" {
		t.Fatalf("force was not re-applied: %+v", sv.Settings)
	}
	// Dropping force drops the lock, not the confinement.
	must(t, os.WriteFile(filepath.Join(dir, ManifestFile), []byte(probeManifest("upd", `{"enabled": true}`)), 0o644))
	f.register(t, dir, false)
	sv, _ = f.s.Sandbox(ctx, "upd")
	if sv.Forced || !sv.Settings.Enabled || sv.Settings.ReadMode != "strict" || sv.Settings.Network != "off" {
		t.Fatalf("after dropping force: %+v", sv)
	}
	if _, err := f.s.PutSandbox(ctx, "upd", SandboxPatch{Enabled: &off}); err != nil {
		t.Fatalf("an unforced sandbox could not be disabled: %v", err)
	}
	// rm keeps the copy unless purged; purge removes only the copy.
	files, err := f.s.Remove(ctx, "upd", false)
	must(t, err)
	if !strings.Contains(files, "still on disk") {
		t.Fatalf("rm: %q", files)
	}
	if _, err := os.Stat(v.Dir); err != nil {
		t.Fatal("rm without purge removed the files")
	}
	f.register(t, dir, false)
	if files, _ := f.s.Remove(ctx, "upd", true); files != "purged" {
		t.Fatalf("rm --purge: %q", files)
	}
	if _, err := os.Stat(v.Dir); !os.IsNotExist(err) {
		t.Fatal("rm --purge kept the engine's copy")
	}
	if _, err := os.Stat(filepath.Join(dir, "probe.py")); err != nil {
		t.Fatal("rm --purge touched the folder the app was copied from")
	}
	inPlace := f.register(t, dir, true)
	if files, _ := f.s.Remove(ctx, inPlace.ID, true); !strings.Contains(files, "untouched") {
		t.Fatalf("rm --purge of an app in place: %q", files)
	}
	if _, err := os.Stat(filepath.Join(dir, "probe.py")); err != nil {
		t.Fatal("rm --purge removed an app run in place")
	}
	if _, err := f.e.Get(sandboxID("upd")); err == nil {
		t.Fatal("rm left the app's sandbox")
	}
}

// TestRegisteringReadsOnlyWhatTheSandboxUserMay: a folder's files are
// read as the sandbox user and by descriptor, as the file API reads: a
// file of the folder the sandbox user may not read refuses the copy
// (the engine would hand it to the app), and a manifest that is a link
// (to /dev/zero, endless) or a FIFO (which never answers) is refused
// at once, whatever the folder. Nothing is registered.
func TestRegisteringReadsOnlyWhatTheSandboxUserMay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	type layout func(dir string)
	cases := []struct {
		name    string
		make    layout
		inPlace bool
		says    string
		root    bool
	}{
		{"root_only_file", func(dir string) {
			p := filepath.Join(dir, "root-only")
			must(t, os.WriteFile(p, []byte("ROOT SECRET"), 0o600))
		}, false, "root-only", true},
		{"root_only_folder", func(dir string) {
			must(t, os.Mkdir(filepath.Join(dir, "private"), 0o700))
			must(t, os.WriteFile(filepath.Join(dir, "private", "key"), []byte("ROOT SECRET"), 0o644))
		}, false, "private", true},
		{"manifest_to_dev_zero", func(dir string) {
			must(t, os.Remove(filepath.Join(dir, ManifestFile)))
			must(t, os.Symlink("/dev/zero", filepath.Join(dir, ManifestFile)))
		}, true, ManifestFile, false},
		{"manifest_fifo", func(dir string) {
			must(t, os.Remove(filepath.Join(dir, ManifestFile)))
			must(t, mkfifo(filepath.Join(dir, ManifestFile)))
		}, false, ManifestFile, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.root && os.Geteuid() != 0 {
				t.Skip("the engine reads as the sandbox user only as root")
			}
			dir := writeApp(t, probeManifest("reads-"+strings.ReplaceAll(tc.name, "_", "-"), ""), map[string]string{"probe.py": probeApp})
			tc.make(dir)
			done := make(chan error, 1)
			go func() {
				_, err := f.s.Register(ctx, RegisterRequest{Dir: dir, InPlace: tc.inPlace})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("register: %v, want a refusal naming %s", err, tc.says)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the registration hangs on what the folder holds")
			}
			got, _ := f.s.List(ctx, "*")
			for _, a := range got {
				if strings.HasPrefix(a.ID, "reads-") {
					t.Errorf("registered %s", a.ID)
				}
			}
		})
	}
}

// TestRegistrationsAreBounded: the apps registered at once are bounded
// (each holds a sandbox and a copy), an update of a known app is not
// refused, and registrations stage their files a few at a time: one
// that cannot get a slot before its caller gives up stages nothing.
func TestRegistrationsAreBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(_ *app.Options, o *Options) { o.MaxApps = 2 })
	ctx := context.Background()
	zipOf := func(id string) *bytes.Buffer {
		return makeZip(t, zipEntry{name: ManifestFile, data: probeManifest(id, "")}, zipEntry{name: "probe.py", data: probeApp})
	}
	for _, id := range []string{"first", "second"} {
		if _, err := f.s.RegisterZip(ctx, zipOf(id), nil); err != nil {
			t.Fatalf("register %s: %v", id, err)
		}
	}
	_, err := f.s.RegisterZip(ctx, zipOf("third"), nil)
	var le *app.LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "2 Space Apps are registered") {
		t.Fatalf("a third app: %v, want a limit refusal", err)
	}
	if _, err := f.s.RegisterZip(ctx, zipOf("first"), nil); err != nil {
		t.Fatalf("an update of a known app at the bound: %v", err)
	}
	for range maxUnpacking {
		f.s.unpacking <- struct{}{}
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := f.s.RegisterZip(short, zipOf("first"), nil); err == nil || !strings.Contains(err.Error(), "waiting for another registration") {
		t.Fatalf("a registration with every staging slot taken: %v", err)
	}
	if left, _ := os.ReadDir(f.s.dirs.staging); len(left) != 0 {
		t.Errorf("a registration that waited staged %d files", len(left))
	}
	for range maxUnpacking {
		<-f.s.unpacking
	}
}

// TestAFolderIsCopiedToABoundedDepth: a folder an app is copied from
// may be 32 levels deep (folders and file names), as a zip may; one
// deeper is refused with its depth, to run in place instead, and
// nothing is registered. The copy at the bound installs.
func TestAFolderIsCopiedToABoundedDepth(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for _, depth := range []int{MaxDepth, MaxDepth + 1} {
		id := fmt.Sprintf("deep-%d", depth)
		dir := writeApp(t, probeManifest(id, ""), map[string]string{"probe.py": probeApp})
		deep := filepath.Join(dir, strings.Repeat("d/", depth-1))
		must(t, os.MkdirAll(deep, 0o755))
		must(t, os.WriteFile(filepath.Join(deep, "f"), []byte("x"), 0o644))
		for p := deep; p != dir; p = filepath.Dir(p) {
			must(t, os.Chmod(p, 0o755))
		}
		_, err := f.s.Register(ctx, RegisterRequest{Dir: dir})
		if depth <= MaxDepth {
			if err != nil {
				t.Fatalf("depth %d: %v", depth, err)
			}
			if _, err := os.Stat(filepath.Join(f.e.DataDir(), "apps", id, strings.Repeat("d/", depth-1), "f")); err != nil {
				t.Errorf("depth %d: not installed: %v", depth, err)
			}
			continue
		}
		var fe *app.FieldError
		if !errors.As(err, &fe) || fe.Field != "dir" || !strings.Contains(err.Error(), fmt.Sprintf("%d levels deep; at most %d", depth, MaxDepth)) {
			t.Errorf("depth %d: %v", depth, err)
		}
		if _, err := f.s.Get(id); err == nil {
			t.Errorf("depth %d: registered", depth)
		}
	}
}

// TestZipEntriesAreCountedWhereArchiveZipReadsThem: the count made before
// a zip's directory is read finds the directory as archive/zip does: in
// a plain zip, one with a comment, a zip64 one (more than 65535 entries)
// and one behind prepended data (a self-extracting archive).
func TestZipEntriesAreCountedWhereArchiveZipReadsThem(t *testing.T) {
	t.Parallel()
	build := func(n int, comment string) []byte {
		var buf bytes.Buffer
		w := zip.NewWriter(&buf)
		for i := range n {
			if _, err := w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%d", i), Method: zip.Store}); err != nil {
				t.Fatal(err)
			}
		}
		must(t, w.SetComment(comment))
		must(t, w.Close())
		return buf.Bytes()
	}
	cases := map[string][]byte{
		"plain":     build(3, ""),
		"comment":   build(5, strings.Repeat("c", 2000)),
		"zip64":     build(70000, ""),
		"prepended": append([]byte(strings.Repeat("#!/bin/sh\n", 100)), build(7, "")...),
	}
	for name, data := range cases {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := countEntries(bytes.NewReader(data), int64(len(data)), 1<<20); got != len(zr.File) {
			t.Errorf("%s: counted %d entries, archive/zip reads %d", name, got, len(zr.File))
		}
	}
}
