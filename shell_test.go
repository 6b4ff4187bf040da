package main

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"golang.org/x/sys/unix"
)

// TestShellInATerminal drives senclaw shell NAME from a pseudo-terminal,
// as a person would at docker exec -it: a terminal inside a persistent
// bwrap sandbox, named rather than by id; a command typed and its answer
// read; a resize that stty sees; input pushed into the terminal with
// TIOCSTI refused by the sandbox's seccomp filter; exit 3 passed through.
func TestShellInATerminal(t *testing.T) {
	d := startDaemon(t)
	sb, err := d.c.Create(context.Background(), app.SandboxConfig{Name: ptrTo("shell-test"), Backend: ptrTo("bwrap")})
	if err != nil {
		t.Fatal(err)
	}
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command(d.bin, "shell", "shell-test")
	cmd.Env = append(d.env, "TERM=dumb")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var mu sync.Mutex
	var screen strings.Builder
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			s := screen.String()
			mu.Unlock()
			if strings.Contains(s, what) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the terminal never showed %q; it shows:\n%q", what, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	typ := func(s string) { master.Write([]byte(s)) }
	typ("test -t 0 && test -t 1 && echo TTY-$((40+2)) in $(basename $PWD)\n")
	waitFor("TTY-42 in " + sb.Sandbox.ID)
	typ("stty size\n")
	waitFor("24 80")
	unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: 132, Row: 43})
	time.Sleep(300 * time.Millisecond) // SIGWINCH goes to the CLI, then on
	typ("stty size\n")
	waitFor("43 132")
	typ(`python3 -c 'import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x"); print("STI-" + "PASSED")
except OSError as e:
    print("STI-" + "REFUSED", e.errno)'` + "\n")
	waitFor("STI-REFUSED 1")
	typ("exit 3\n")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the shell did not exit")
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	mu.Lock()
	if strings.Contains(screen.String(), "STI-PASSED") {
		t.Errorf("TIOCSTI went through:\n%s", screen.String())
	}
	mu.Unlock()
	rec := d.lastRun(t)
	if !rec.Terminal || !rec.Interactive || rec.Source != app.SourceCLI || rec.Isolation != "bwrap" || rec.SandboxID != sb.Sandbox.ID || rec.TimedOut {
		t.Errorf("record %+v", rec)
	}
}

// TestShellCommandWithoutATerminal: senclaw shell ID -- CMD with pipes
// runs CMD there, stdin and the exit code passed through; an unknown
// sandbox is an error, not a shell somewhere else.
func TestShellCommandWithoutATerminal(t *testing.T) {
	d := startDaemon(t)
	sb, err := d.c.Create(context.Background(), app.SandboxConfig{Backend: ptrTo("bwrap")})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(d.bin, "shell", sb.Sandbox.ID, "--", "sh", "-c", "read line; echo got $line; exit 7")
	cmd.Env = d.env
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.Output()
	if string(out) != "got hello\n" || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("senclaw shell -- CMD: %q %v", out, err)
	}
	cmd = exec.Command(d.bin, "shell", "no-such-sandbox")
	cmd.Env = d.env
	msg, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(string(msg), "no-such-sandbox") {
		t.Errorf("an unknown sandbox: exit %d, %s", code, msg)
	}
}

func ptrTo[T any](v T) *T { return &v }
