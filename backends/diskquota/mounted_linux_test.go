package diskquota

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestMountedReadsTheMountTable checks Mounted, which compares the mount
// table's lines in place, against the table as mountPoints parses it:
// every mount point is mounted, a folder under none is not, and (as
// root) a tmpfs at a path with a space, which the table escapes, is
// found, and is gone once unmounted.
func TestMountedReadsTheMountTable(t *testing.T) {
	points := mountPoints()
	if len(points) == 0 {
		t.Fatal("no mount points read from /proc/self/mountinfo")
	}
	for _, m := range points {
		if !Mounted(m.point) {
			t.Errorf("Mounted(%q) is false; the table has it (%s)", m.point, m.fstype)
		}
	}
	plain := t.TempDir()
	if Mounted(plain) {
		t.Errorf("Mounted(%q) is true for a folder nothing is mounted at", plain)
	}
	if os.Geteuid() != 0 {
		return
	}
	spaced := filepath.Join(testutil.SandboxDir(t, "senclaw-mounted-"), "a b\tc")
	if err := os.Mkdir(spaced, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", spaced, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(spaced, syscall.MNT_DETACH) })
	if !Mounted(spaced) {
		t.Errorf("Mounted(%q) is false for a tmpfs mounted there", spaced)
	}
	if err := Unmount(spaced); err != nil {
		t.Fatal(err)
	}
	if Mounted(spaced) {
		t.Errorf("Mounted(%q) is true after Unmount", spaced)
	}
	// A table longer than one read of its buffer is read to its end.
	many := testutil.SandboxDir(t, "senclaw-mounted-many-")
	var last string
	for i := 0; i < 80; i++ {
		dir := filepath.Join(many, fmt.Sprintf("%03d-%s", i, strings.Repeat("m", 200)))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
		last = dir
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); len(b) <= 16<<10 {
		t.Fatalf("the mount table is %d bytes, not longer than one read", len(b))
	}
	if !Mounted(last) {
		t.Errorf("Mounted(%q) is false for the last of 80 tmpfs", last)
	}
}
