package daemon

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestServeTellsSystemdItIsReady runs `senclaw serve` as a Type=notify
// unit would: it sends READY=1 with its pid once the API listens, and
// STOPPING=1 when it stops.
func TestServeTellsSystemdItIsReady(t *testing.T) {
	data := cliEnv(t)
	sockPath := filepath.Join(t.TempDir(), "notify.sock")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Setenv("NOTIFY_SOCKET", sockPath)
	served := make(chan int, 1)
	go func() {
		code, _, _ := senclaw(t, "--data-dir", data, "serve", "--listen", "")
		served <- code
	}()
	read := func() string {
		l.SetReadDeadline(time.Now().Add(15 * time.Second))
		buf := make([]byte, 512)
		n, err := l.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	if got := read(); !strings.HasPrefix(got, "READY=1\nMAINPID=") {
		t.Fatalf("first notification %q, want READY=1 with MAINPID", got)
	}
	if code, out, _ := senclaw(t, "ls", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("the daemon is not ready after READY=1: %d %q", code, out)
	}
	senclaw(t, "stop")
	if got := read(); !strings.HasPrefix(got, "STOPPING=1") {
		t.Fatalf("notification at stop %q, want STOPPING=1", got)
	}
	<-served
}

// TestServeExecsTheEngineAsTheSameProcess: senclaw serve, the CLI, execs
// senclaw-engine in its own process, so that a Type=notify unit sees the
// pid it started send READY=1 (NotifyAccess=main), and signal it.
func TestServeExecsTheEngineAsTheSameProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds senclaw")
	}
	t.Parallel()
	d := buildDaemon(t)
	sockPath := filepath.Join(t.TempDir(), "notify.sock")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(d.bin, "--data-dir", d.data, "serve", "--listen", "")
	cmd.Env = append(d.env, "NOTIFY_SOCKET="+sockPath)
	cmd.Stdout, cmd.Stderr = testutil.LogFile(t), testutil.LogFile(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	l.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 512)
	n, err := l.Read(buf)
	if want := fmt.Sprintf("READY=1\nMAINPID=%d\n", cmd.Process.Pid); err != nil || string(buf[:n]) != want {
		t.Fatalf("notification %q %v, want %q", buf[:n], err, want)
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid))
	if filepath.Base(exe) != "senclaw-engine" {
		t.Errorf("the process senclaw serve started runs %s, not senclaw-engine", exe)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("senclaw serve after SIGTERM: %v", err)
	}
}
