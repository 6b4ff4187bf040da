//go:build unix

package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/app/sandboxuid"
)

// TestAccountFilesChangeWithTheirFiles: the account files' sum says each
// file's inode, size and modification time, and "-" for one missing, so
// that a replaced file (useradd renames a new one in) reads as changed.
func TestAccountFilesChangeWithTheirFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sys := sandboxuid.System{Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group"), Subuid: filepath.Join(dir, "subuid"), Subgid: filepath.Join(dir, "subgid")}
	for _, p := range []string{sys.Passwd, sys.Group, sys.Subuid} {
		if err := os.WriteFile(p, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want strings.Builder
	for _, p := range []string{sys.Passwd, sys.Group, sys.Subuid} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		fmt.Fprintf(&want, "%d:%d:%d;", st.Ino, st.Size, fi.ModTime().UnixNano())
	}
	want.WriteString("-;")
	before := accountFiles(sys)
	if before != want.String() {
		t.Fatalf("accountFiles = %q, want %q", before, want.String())
	}
	tmp := sys.Group + ".new"
	if err := os.WriteFile(tmp, []byte("root:x:0:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, sys.Group); err != nil {
		t.Fatal(err)
	}
	if after := accountFiles(sys); after == before {
		t.Fatalf("accountFiles did not change when group was replaced: %q", after)
	}
}
