package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
