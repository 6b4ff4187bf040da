package app

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer collects a run's streamed output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// agentShellEngines are the two paths of the agent shell: the switch on
// (the project's bwrap sandbox) and off (directly on the host).
func agentShellEngines(t *testing.T) map[string]*Engine {
	on := bwrapEngine(t)
	pol := on.Policy()
	pol.ExecShell = true
	pol.ExecNetwork = false
	if _, err := on.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	onNet := bwrapEngine(t)
	pol.ExecNetwork = true
	if _, err := onNet.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	return map[string]*Engine{"bwrap": on, "bwrap_network": onNet, "off": bwrapEngine(t)}
}

// projectDir is a project e's agent sandbox may write.
func projectDir(t *testing.T, e *Engine) string {
	dir := testDir(t)
	e.giveToAgent(t, dir)
	return dir
}

// An attached run with a terminal: the command sees a terminal of the
// asked size on the descriptors asked for (pipes on the others), as its
// controlling terminal, gets typed input, a resize, and TIOCSTI refused
// inside the sandbox.
func TestAttachedRunGetsATerminal(t *testing.T) {
	t.Parallel()
	for name, e := range agentShellEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stdinR, stdinW := io.Pipe()
			control := make(chan Control, 4)
			var errOut lockedBuffer
			out := &lockedBuffer{}
			started := make(chan RunRecord, 1)
			script := `test -t 0 && echo stdin-tty; test -t 1 && echo stdout-tty; test -t 2 || echo stderr-pipe >&2
stty size; read line; echo "got $line"
trap 'stty size; exit 0' WINCH; echo ready; while :; do sleep 0.05; done`
			go func() {
				<-started
				io.WriteString(stdinW, "typed\n")
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(out.String(), "ready") && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				control <- Control{Cols: 100, Rows: 30}
			}()
			att := &Attachment{Stdin: stdinR, Terminal: &TerminalRequest{Cols: 80, Rows: 24, FDs: []int{0, 1}}, Control: control,
				Started: func(r RunRecord) { started <- r }}
			res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: projectDir(t, e), Command: script, Attach: att, Agent: "shell", Stdout: out, Stderr: &errOut})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Record
			got := strings.ReplaceAll(out.String(), "\r\n", "\n")
			if !r.Terminal || !r.OK() || r.Agent != "shell" {
				t.Fatalf("record %+v\nout %q err %q", r, got, errOut.String())
			}
			for _, want := range []string{"stdin-tty\n", "stdout-tty\n", "24 80\n", "got typed\n", "30 100\n"} {
				if !strings.Contains(got, want) {
					t.Errorf("the terminal's output %q lacks %q", got, want)
				}
			}
			if !strings.Contains(res.Stderr, "stderr-pipe") {
				t.Errorf("stderr %q: fd 2 was to stay a pipe", res.Stderr)
			}
		})
	}
}

// Inside the sandbox the terminal is the command's own, and still no
// process may push input into it (TIOCSTI): the seccomp filter holds with
// a terminal as without.
func TestAttachedTerminalRefusesTIOCSTI(t *testing.T) {
	t.Parallel()
	e := agentShellEngines(t)["bwrap"]
	att := &Attachment{Terminal: &TerminalRequest{Cols: 80, Rows: 24, FDs: []int{0, 1, 2}}}
	script := `python3 -c 'import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x")
    print("injected")
except OSError as e:
    print("refused", e.errno)'`
	res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: projectDir(t, e), Command: script, Attach: att})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Record.Terminal || !strings.Contains(res.Stdout, "refused 1") {
		t.Fatalf("TIOCSTI inside: %q (record %+v)", res.Stdout, res.Record)
	}
}

// Without a terminal: stdin is a pipe that ends with the caller's EOF, and
// a signal the caller passes reaches the command (its trap runs), on both
// paths of the switch.
func TestAttachedRunPassesStdinAndSignals(t *testing.T) {
	t.Parallel()
	for name, e := range agentShellEngines(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			control := make(chan Control, 1)
			out := &lockedBuffer{}
			go func() {
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(out.String(), "waiting") && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				control <- Control{Signal: "TERM"}
			}()
			att := &Attachment{Stdin: strings.NewReader("line one\nline two\n"), Control: control}
			script := `wc -l; trap 'echo got TERM; exit 7' TERM; echo waiting; while :; do sleep 0.05; done`
			res, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: projectDir(t, e), Command: script, Attach: att, Stdout: out})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Record
			if r.ExitCode == nil || *r.ExitCode != 7 || !strings.Contains(res.Stdout, "2\n") || !strings.Contains(res.Stdout, "got TERM") {
				t.Fatalf("record %+v stdout %q stderr %q", r, res.Stdout, res.Stderr)
			}
		})
	}
}
