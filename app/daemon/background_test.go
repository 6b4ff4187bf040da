package daemon

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestREADMEServerLivesPastItsTimeout runs the README's server example,
// `senclaw create --name web --listen P` and `senclaw run --sandbox ID
// --background -- python3 -m http.server P`, and checks after 60 s (twice
// the sandbox's 30 s timeout) that the server still answers; then ps
// lists it, logs shows its requests, and kill RUN ends it.
func TestREADMEServerLivesPastItsTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a minute")
	}
	requireTools(t, "bwrap", "python3")
	// Parallel: most of it is the minute it waits. The daemon and the
	// CLI are processes with an environment of their own (startDaemon);
	// the forwarder a listen port needs is beside them.
	t.Parallel()
	d := startDaemon(t)
	senclaw := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(d.bin, args...)
		cmd.Env = d.env
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()

	code, out, errOut := senclaw(t, "create", "--name", "web", "--listen", port)
	id := strings.TrimSpace(out)
	if code != 0 || id == "" {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	code, out, errOut = senclaw(t, "run", "--sandbox", id, "--background", "--", "python3", "-m", "http.server", port)
	if code != 0 || !strings.Contains(errOut, "started run "+strings.TrimSpace(out)) || !strings.Contains(errOut, "runs until it exits") {
		t.Fatalf("run --background: %d %q %q", code, out, errOut)
	}
	runID := strings.TrimSpace(out)
	get := func() error {
		resp, err := http.Get("http://127.0.0.1:" + port + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	for deadline := time.Now().Add(15 * time.Second); get() != nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server does not answer: %v", get())
		}
	}
	time.Sleep(60 * time.Second)
	if err := get(); err != nil {
		t.Fatalf("after 60 s the README's server is gone: %v", err)
	}
	if code, out, _ := senclaw(t, "ps"); code != 0 || !strings.Contains(out, runID) || !strings.Contains(out, "when stopped") {
		t.Fatalf("ps: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "logs", runID); code != 0 || !strings.Contains(out, `"GET / HTTP/1.1" 200`) {
		t.Fatalf("logs: %d %q", code, out)
	}
	if code, out, _ := senclaw(t, "kill", runID); code != 0 || !strings.Contains(out, "killed") {
		t.Fatalf("kill RUN: %d %q", code, out)
	}
	for deadline := time.Now().Add(10 * time.Second); get() == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server still answers after kill")
		}
	}
	if code, out, _ := senclaw(t, "ps"); code != 0 || strings.Contains(out, runID) {
		t.Fatalf("ps after kill: %d %q", code, out)
	}
}
