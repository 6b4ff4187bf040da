package testutil

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SessionBus starts a private D-Bus session bus for the test and returns
// its address; the test never touches the user's own bus. Without
// dbus-daemon it skips (Need: fails under CI=true).
func SessionBus(t testing.TB) string {
	t.Helper()
	return startBus(t, "--session")
}

// BareSessionBus is SessionBus without the system's activatable services:
// nothing answers on it that the test did not start.
func BareSessionBus(t testing.TB) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "bus.conf")
	err := os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:tmpdir=/tmp</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return startBus(t, "--config-file="+conf)
}

func startBus(t testing.TB, config string) string {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		Need(t, "dbus-daemon is missing (Debian: apt-get install dbus-daemon)")
	}
	cmd := exec.Command(daemon, config, "--print-address", "--nofork")
	// Dies with the test binary, even when a timeout panic skips cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
		close(lines)
	}()
	select {
	case addr, ok := <-lines:
		if !ok || addr == "" {
			t.Fatal("dbus-daemon printed no address")
		}
		return addr
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon did not print its address within 10 s")
	}
	return ""
}
