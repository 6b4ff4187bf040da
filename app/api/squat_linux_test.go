package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestASquattedPortIsNeverFallenBackFrom: the second user listens on the
// dashboard's port first. Serve refuses to start, naming the holder, even
// with a fallback address; with WithoutTCPIfSquatted (the desktop app) it
// serves the socket alone, and its note says why.
func TestASquattedPortIsNeverFallenBackFrom(t *testing.T) {
	u := testutil.SecondUser(t)
	port := testutil.FreePort(t)
	pid, _ := u.HoldPort(t, port)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := New(Options{Engine: testEngine(t), Token: testToken})
	rt := filepath.Join(testDir(t), "rt")

	err := s.Serve(context.Background(), DaemonOptions{RuntimeDir: rt, Listen: addr, FallbackListen: "127.0.0.1:0",
		Ready: func(DaemonInfo) { t.Error("Serve started with its port squatted") }})
	var pe *PortTakenError
	if !errors.As(err, &pe) || !pe.Foreign || !strings.Contains(err.Error(), "pid "+strconv.Itoa(pid)+" (python3) of uid "+strconv.Itoa(u.UID)) {
		t.Fatalf("Serve with its port held by %s: %v", u.Name, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan DaemonInfo, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, DaemonOptions{RuntimeDir: rt, Listen: addr, FallbackListen: "127.0.0.1:0", WithoutTCPIfSquatted: true,
			Ready: func(i DaemonInfo) { ready <- i }})
	}()
	select {
	case info := <-ready:
		if info.URL != "" || !strings.Contains(info.Note, "not served over HTTP") || !strings.Contains(info.Note, u.Name) {
			t.Errorf("the desktop's daemon with its port squatted: %+v", info)
		}
	case err := <-done:
		t.Fatalf("Serve without TCP: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestAPortBoundButNotListenedOnIsSquattedToo: the second user binds the
// dashboard's port without listening yet (a bound socket holds the port
// as well as a listener does, but is no LISTEN line of /proc/net/tcp),
// and listens once the engine has moved elsewhere. Serve must not fall
// back: the holder is named as the listener's would be.
func TestAPortBoundButNotListenedOnIsSquattedToo(t *testing.T) {
	u := testutil.SecondUser(t)
	port := testutil.FreePort(t)
	cmd := u.Command("/usr/bin/python3", "-c", `
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))
print("ready", flush=True)
time.sleep(600)`, strconv.Itoa(port))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("binding port %d as %s: %q", port, u.Name, line)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := New(Options{Engine: testEngine(t), Token: testToken})
	rt := filepath.Join(testDir(t), "rt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := s.Serve(ctx, DaemonOptions{RuntimeDir: rt, Listen: addr, FallbackListen: "127.0.0.1:0",
		Ready: func(i DaemonInfo) {
			t.Errorf("Serve started at %s with its port bound by %s (note: %s)", i.URL, u.Name, i.Note)
			cancel()
		}})
	var pe *PortTakenError
	if !errors.As(err, &pe) || !pe.Foreign || !strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)+" (python3) of uid "+strconv.Itoa(u.UID)) {
		t.Fatalf("Serve with its port bound by %s: %v", u.Name, err)
	}
}

// TestTheSamePortOnIPv6LoopbackIsSquattedToo: the second user listens on
// [::1] at the dashboard's port, which 127.0.0.1's listener leaves free:
// a client configured for localhost (as MCP clients often are) reaches
// [::1] first where localhost is both. Serve refuses to start, naming
// the holder, as for a holder of 127.0.0.1 itself.
func TestTheSamePortOnIPv6LoopbackIsSquattedToo(t *testing.T) {
	u := testutil.SecondUser(t)
	port := testutil.FreePort(t)
	cmd := u.Command("/usr/bin/python3", "-c", `
import socket, sys, time
s = socket.socket(socket.AF_INET6); s.bind(("::1", int(sys.argv[1]))); s.listen(8)
print("ready", flush=True)
time.sleep(600)`, strconv.Itoa(port))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		testutil.Need(t, fmt.Sprintf("IPv6 loopback (listening on [::1]:%d as %s: %q)", port, u.Name, line))
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := New(Options{Engine: testEngine(t), Token: testToken})
	rt := filepath.Join(testDir(t), "rt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := s.Serve(ctx, DaemonOptions{RuntimeDir: rt, Listen: addr,
		Ready: func(i DaemonInfo) {
			t.Errorf("Serve started at %s with [::1]:%d held by %s", i.URL, port, u.Name)
			cancel()
		}})
	var pe *PortTakenError
	if !errors.As(err, &pe) || !pe.Foreign || !strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)+" (python3) of uid "+strconv.Itoa(u.UID)) ||
		!strings.Contains(err.Error(), "on [::1]:"+strconv.Itoa(port)) {
		t.Fatalf("Serve with [::1]:%d held by %s: %v", port, u.Name, err)
	}
}
