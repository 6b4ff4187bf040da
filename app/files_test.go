package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

func TestTheFileAPIIsAJail(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	outside := testDir(t)
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("top"), 0o644); err != nil {
		t.Fatal(err)
	}
	roDir, rwDir := testDir(t), testDir(t)
	// A read-write mount the sandbox user may write (the file API acts
	// with its rights).
	if err := os.Chmod(rwDir, 0o777); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("direct"), Mounts: []backends.Mount{
		{Source: roDir, Target: "ro", ReadOnly: true},
		{Source: rwDir, Target: "rw"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ws := sb.Workspace
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(ws, "abs-link")))
	must(os.Symlink("../../../../../../../../"+secret, filepath.Join(ws, "rel-link")))
	must(os.Symlink(outside, filepath.Join(ws, "dir-link")))
	must(syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	must(os.WriteFile(filepath.Join(roDir, "data"), []byte("ro data"), 0o644))

	refusedWrites := []string{"../escape", "a/../../escape", "abs-link", "rel-link", "dir-link/new", "ro/data", "ro/new", "."}
	for _, p := range refusedWrites {
		if _, err := e.WriteFile(sb.ID, p, []byte("pwned")); err == nil {
			t.Errorf("write %q was allowed", p)
		}
	}
	if data, _ := os.ReadFile(secret); string(data) != "top" {
		t.Fatalf("the outside file was changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a file was created outside")
	}
	if data, _ := os.ReadFile(filepath.Join(roDir, "data")); string(data) != "ro data" {
		t.Fatal("a read-only mount was written")
	}
	for _, p := range []string{"../secret", "abs-link", "rel-link", "dir-link/secret"} {
		if _, err := e.ReadFile(sb.ID, p, 0, false); err == nil {
			t.Errorf("read %q was allowed", p)
		}
	}
	for _, p := range []string{"ro/new", "ro", "."} {
		if err := e.DeleteFile(sb.ID, p); err == nil {
			t.Errorf("delete %q was allowed", p)
		}
	}
	if err := e.Mkdir(sb.ID, "ro/x"); err == nil {
		t.Error("mkdir in a read-only mount was allowed")
	}

	done := make(chan error, 1)
	go func() { _, err := e.ReadFile(sb.ID, "fifo", 0, false); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("reading a FIFO succeeded")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("reading a FIFO hung")
	}

	// What is allowed works, mounts included.
	if _, err := e.WriteFile(sb.ID, "sub/dir/file.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	fc, err := e.ReadFile(sb.ID, "sub/dir/file.txt", 0, false)
	if err != nil || fc.Content != "hello" || fc.Encoding != "utf-8" {
		t.Fatalf("read back: %+v %v", fc, err)
	}
	// The workspace's own host path works; another absolute path is
	// refused, saying so.
	if fc, err := e.ReadFile(sb.ID, sb.Workspace+"/sub/dir/file.txt", 0, false); err != nil || fc.Content != "hello" {
		t.Fatalf("read by the workspace's host path: %+v %v", fc, err)
	}
	if _, err := e.ReadFile(sb.ID, "/sub/dir/file.txt", 0, false); err == nil || !strings.Contains(err.Error(), "is absolute") {
		t.Fatalf("an absolute path: %v", err)
	}
	if _, err := e.WriteFile(sb.ID, "rw/out.bin", []byte{0, 1, 2, 255}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(rwDir, "out.bin")); len(data) != 4 {
		t.Fatal("the rw mount did not get the file")
	}
	fc, err = e.ReadFile(sb.ID, "rw/out.bin", 0, false)
	if err != nil || fc.Encoding != "base64" || fc.Content != "AAEC/w==" {
		t.Fatalf("binary read: %+v %v", fc, err)
	}
	fc, err = e.ReadFile(sb.ID, "ro/data", 0, false)
	if err != nil || fc.Content != "ro data" {
		t.Fatalf("ro read: %+v %v", fc, err)
	}
	entries, err := e.Files(sb.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fe := range entries {
		names = append(names, fe.Name)
	}
	got := strings.Join(names, ",")
	for _, want := range []string{"sub", "ro", "rw", "abs-link"} {
		if !strings.Contains(got, want) {
			t.Errorf("listing %q lacks %s", got, want)
		}
	}
	if _, err := e.Files(sb.ID, "dir-link"); err == nil {
		t.Error("listing through a link to outside was allowed")
	}
	if err := e.DeleteFile(sb.ID, "sub"); err != nil {
		t.Fatal(err)
	}
	var nf *NotFoundError
	if _, err := e.ReadFile(sb.ID, "sub/dir/file.txt", 0, false); !errors.As(err, &nf) {
		t.Fatalf("after delete: %v", err)
	}
	big := make([]byte, MaxFileRead+1)
	if _, err := e.WriteFile(sb.ID, "big", big); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReadFile(sb.ID, "big", 0, false); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("oversized read: %v", err)
	}
}

// canonicalUnder agrees with canonical for present, absent and linked
// paths below a canonical base.
func TestCanonicalUnderAgreesWithCanonical(t *testing.T) {
	t.Parallel()
	base := canonical(t.TempDir())
	os.MkdirAll(filepath.Join(base, ".config", "real"), 0o755)
	os.Symlink(filepath.Join(base, ".config", "real"), filepath.Join(base, ".config", "gcloud"))
	os.Symlink("/nonexistent/target", filepath.Join(base, ".aws"))
	os.Mkdir(filepath.Join(base, ".ssh"), 0o700)
	for _, rel := range []string{".ssh", ".config/gcloud", ".config/gh", ".aws", ".cargo/credentials", ".config/gcloud/x"} {
		if got, want := canonicalUnder(base, rel), canonical(filepath.Join(base, rel)); got != want {
			t.Errorf("%s: %q, canonical says %q", rel, got, want)
		}
	}
}
