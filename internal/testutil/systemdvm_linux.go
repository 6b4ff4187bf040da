package testutil

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// systemdImage is the image scripts/systemd-test-image.sh built, found or
// built once per test process.
var systemdImage = sync.OnceValues(func() (string, error) {
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "..", "scripts", "systemd-test-image.sh")
	var stderr bytes.Buffer
	cmd := exec.Command("sh", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &imageError{err, stderr.String()}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
})

type imageError struct {
	err    error
	stderr string
}

func (e *imageError) Error() string {
	s := e.stderr
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return "scripts/systemd-test-image.sh: " + e.err.Error() + "\n" + s
}

// SystemdVM boots the systemd test image (a Debian with systemd as pid 1
// on cgroup v2 and a lingering user senclaw-user, uid 1000, whose user
// manager runs; see scripts/systemd-test-image.sh) in qemu, with dir as
// its second disk: the image mounts it at /mnt/test, read-only, and runs
// its guest.sh as root. It returns what the guest wrote to its console
// once it has powered off, and fails t if that takes longer than
// timeout. Building the image the first time (debootstrap from Debian's
// mirror) takes minutes; `make test-deps` does it ahead.
//
// The accelerator is SENCLAW_TEST_QEMU_ACCEL (default tcg, the emulator,
// which works everywhere, even in a VM whose nested KVM does not; kvm is
// several times quicker where it works).
func SystemdVM(t testing.TB, dir string, timeout time.Duration) string {
	t.Helper()
	RequireRoot(t)
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil || runtime.GOARCH != "amd64" {
		Need(t, "needs qemu-system-x86_64 on amd64 (apt-get install qemu-system-x86, or make test-deps)")
	}
	image, err := systemdImage()
	if err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(t.TempDir(), "test.img")
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-L", "senclaw-test", "-d", dir, disk, "512M").CombinedOutput(); err != nil {
		t.Fatalf("making the test's disk: %v\n%s", err, out)
	}
	accel := os.Getenv("SENCLAW_TEST_QEMU_ACCEL")
	if accel == "" {
		accel = "tcg,thread=multi"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu, "-accel", accel, "-cpu", "max", "-m", "1536", "-smp", "2",
		"-nographic", "-no-reboot", "-snapshot", "-nic", "none", "-monitor", "none", "-serial", "stdio",
		"-kernel", filepath.Join(image, "vmlinuz"), "-initrd", filepath.Join(image, "initrd.img"),
		"-append", "root=/dev/vda rw console=ttyS0 quiet loglevel=1 systemd.show_status=0",
		"-drive", "file="+filepath.Join(image, "root.img")+",format=raw,if=virtio",
		"-drive", "file="+disk+",format=raw,if=virtio")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("the systemd VM ran for %v", time.Since(start).Round(time.Second))
	console := strings.ReplaceAll(out.String(), "\r", "")
	if ctx.Err() != nil {
		t.Fatalf("the systemd VM did not power off within %v; its console:\n%s", timeout, console)
	}
	if err != nil {
		t.Fatalf("qemu: %v; the console:\n%s", err, console)
	}
	return console
}
