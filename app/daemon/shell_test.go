package daemon

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
)

// TestShellInATerminal drives senclaw shell NAME from a pseudo-terminal,
// as a person would at docker exec -it: a terminal inside a persistent
// bwrap sandbox, named rather than by id; a command typed and its answer
// read; a resize that stty sees; input pushed into the terminal with
// TIOCSTI refused by the sandbox's seccomp filter; exit 3 passed through.
func TestShellInATerminal(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	sb, err := d.c.Create(context.Background(), app.SandboxConfig{Name: ptrTo("shell-test"), Backend: ptrTo("bwrap")})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(d.bin, "shell", "shell-test")
	cmd.Env = append(d.env, "TERM=dumb")
	tty := startOnPTY(t, cmd)
	tty.typ("test -t 0 && test -t 1 && echo TTY-$((40+2)) in $(basename $PWD)\n")
	tty.waitFor(t, "TTY-42 in "+sb.Sandbox.ID)
	tty.typ("stty size\n")
	tty.waitFor(t, "24 80")
	tty.resize(132, 43)
	tty.typ("stty size\n")
	tty.waitFor(t, "43 132")
	// EPERM is the sandbox's seccomp filter's answer (the kernel's own
	// refusal, with dev.tty.legacy_tiocsti off, would be EIO).
	tty.typ(`python3 -c 'import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x"); print("STI-" + "PASSED")
except OSError as e:
    print("STI-" + "REFUSED", e.errno)'` + "\n")
	tty.waitFor(t, "STI-REFUSED 1")
	tty.typ("exit 3\n")
	if code := tty.wait(t); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if strings.Contains(tty.String(), "STI-PASSED") {
		t.Errorf("TIOCSTI went through:\n%s", tty.String())
	}
	rec := d.lastRun(t)
	if !rec.Terminal || !rec.Interactive || rec.Source != app.SourceCLI || rec.Isolation != "bwrap" || rec.SandboxID != sb.Sandbox.ID || rec.TimedOut {
		t.Errorf("record %+v", rec)
	}
}

// TestShellCommandWithoutATerminal: senclaw shell ID -- CMD with pipes
// runs CMD there, stdin and the exit code passed through; an unknown
// sandbox is an error, not a shell somewhere else.
func TestShellCommandWithoutATerminal(t *testing.T) {
	t.Parallel()
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
