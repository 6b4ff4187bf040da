package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// Code in a sandbox swaps a mount source's path (proj/lib, which it can
// write through its proj mount) for a link to a folder it cannot see: the
// file API follows no such link, neither in the mount source's own path
// nor under it.
func TestTheFileAPIFollowsNoLinkTheSandboxPlanted(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	base := testDir(t)
	proj := filepath.Join(base, "proj")
	secret := filepath.Join(base, "secret") // out of the sandbox's view
	for _, d := range []string{proj, filepath.Join(proj, "lib"), secret} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	os.Chmod(secret, 0o700)
	if err := os.WriteFile(filepath.Join(secret, "key"), []byte("root-only key"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Mounts: []backends.Mount{
		{Source: proj, Target: "proj"},
		{Source: filepath.Join(proj, "lib"), Target: "lib", ReadOnly: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "mv proj/lib proj/lib.old && ln -s " + secret + " proj/lib && echo swapped"})
	if err != nil || res.Stdout != "swapped\n" {
		t.Fatalf("the swap inside the sandbox: %v %q %q", err, res.Stdout, res.Stderr)
	}
	for _, p := range []string{"lib/key", "proj/lib/key"} {
		if fc, err := e.ReadFile(sb.ID, p, 0, false); err == nil || strings.Contains(err.Error(), "root-only") {
			t.Errorf("GET file %s: %+v, %v", p, fc, err)
		} else if !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("GET file %s: %v, want a refusal that names the link", p, err)
		}
	}
	for _, p := range []string{"lib", "proj/lib"} {
		if list, err := e.Files(sb.ID, p); err == nil {
			t.Errorf("GET files %s listed %+v", p, list)
		}
	}
	for _, p := range []string{"proj/lib/new", "proj/lib/key"} {
		if _, err := e.WriteFile(sb.ID, p, []byte("pwned")); err == nil {
			t.Errorf("PUT file %s was allowed", p)
		}
	}
	if err := e.Mkdir(sb.ID, "proj/lib/dir"); err == nil {
		t.Error("mkdir through the link was allowed")
	}
	if err := e.DeleteFile(sb.ID, "proj/lib/key"); err == nil {
		t.Error("delete through the link was allowed")
	}
	entries, _ := os.ReadDir(secret)
	if data, _ := os.ReadFile(filepath.Join(secret, "key")); len(entries) != 1 || string(data) != "root-only key" {
		t.Fatalf("the folder behind the link changed: %v %q", entries, data)
	}
	// What the sandbox may reach still works: its own files, the mount.
	if _, err := e.WriteFile(sb.ID, "proj/lib.old/ok", []byte("fine")); err != nil {
		t.Fatal(err)
	}
	if fc, err := e.ReadFile(sb.ID, "proj/lib.old/ok", 0, false); err != nil || fc.Content != "fine" {
		t.Fatalf("read back: %+v %v", fc, err)
	}
}

// The file API acts with the sandbox user's rights: a file in a
// read-write mount that this user may not read or write (root's, mode
// 0600, for a root engine; mode 0000 for anyone) is refused, read and
// write, as the sandboxed code would be.
func TestTheFileAPIActsAsTheSandboxUser(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	rw := testDir(t)
	os.Chmod(rw, 0o777)
	private := filepath.Join(rw, "private")
	if err := os.WriteFile(private, []byte("engine only"), 0o600); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(rw, "locked")
	if err := os.WriteFile(locked, []byte("no one"), 0o000); err != nil {
		t.Fatal(err)
	}
	privDir := filepath.Join(rw, "privdir")
	if err := os.Mkdir(privDir, 0o700); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("direct"), Mounts: []backends.Mount{{Source: rw, Target: "rw"}}})
	if err != nil {
		t.Fatal(err)
	}
	refused := []string{"rw/locked"}
	if os.Geteuid() == 0 {
		refused = append(refused, "rw/private")
		if _, err := e.Files(sb.ID, "rw/privdir"); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("listing root's 0700 folder: %v", err)
		}
		if _, err := e.WriteFile(sb.ID, "rw/privdir/new", []byte("x")); err == nil {
			t.Error("writing into root's 0700 folder was allowed")
		}
	}
	for _, p := range refused {
		if fc, err := e.ReadFile(sb.ID, p, 0, false); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("read %s: %+v %v", p, fc, err)
		}
		if _, err := e.WriteFile(sb.ID, p, []byte("overwritten")); err == nil {
			t.Errorf("write %s was allowed", p)
		}
	}
	if data, _ := os.ReadFile(private); string(data) != "engine only" {
		t.Fatalf("the private file was overwritten: %q", data)
	}
	os.Chmod(locked, 0o600) // so that an ordinary test user can look
	if data, _ := os.ReadFile(locked); string(data) != "no one" {
		t.Fatalf("the locked file was overwritten: %q", data)
	}
	// A new file is the sandbox user's, as if the sandbox had made it.
	if _, err := e.WriteFile(sb.ID, "rw/made", []byte("x")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(rw, "made"))
	if err != nil {
		t.Fatal(err)
	}
	want := os.Geteuid()
	if u := e.userOf(sb); u != nil {
		want = int(u.UID)
	}
	if uid, _, _ := ownerOf(fi); int(uid) != want {
		t.Errorf("a file the API made is uid %d's, want the sandbox user %d", uid, want)
	}
}
