package diskquota

import (
	"os"
	"path/filepath"
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
}
